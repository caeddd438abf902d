//! The `tool_calls` `cargo fuzz` target (`fuzz/fuzz_targets/tool_calls.rs`) as a bounded
//! proptest: the same function over random bytes, so CI runs what the fuzzer runs.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn tool_calls(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
        toolchain::fuzzing::action(&data);
    }
}
