//! The `transcript` `cargo fuzz` target (`fuzz/fuzz_targets/transcript.rs`) as a bounded
//! proptest: the same function over random bytes, so CI runs what the fuzzer runs.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn transcript(data in proptest::collection::vec(any::<u8>(), 0..1024)) {
        messages::fuzzing::transcript(&data);
    }
}

/// The structured mode starts from a valid transcript: the template unchanged (an odd first
/// byte, then the zeros of an exhausted input) is accepted.
#[test]
fn the_template_is_a_transcript() {
    assert!(messages::fuzzing::transcript(&[1]));
}
