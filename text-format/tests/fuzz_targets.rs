//! The `text_format` `cargo fuzz` target (`fuzz/fuzz_targets/text_format.rs`) as a bounded
//! proptest: the same function over random bytes, so CI runs what the fuzzer runs.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn text_format(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
        text_format::fuzzing::parse(&data);
    }
}
