//! The stream decoders' `cargo fuzz` targets (`fuzz/fuzz_targets/`) as bounded proptests:
//! the same function (`providers::fuzzing::*`) over random bytes, so CI runs what the
//! fuzzer runs. Failures the fuzzer found are pinned below as regression inputs.

#![cfg(feature = "__http")]

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[cfg(feature = "openai")]
    #[test]
    fn openai_chat(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        providers::fuzzing::openai_chat(&data);
    }

    #[cfg(feature = "openai")]
    #[test]
    fn openai_responses(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        providers::fuzzing::openai_responses(&data);
    }

    #[cfg(feature = "anthropic")]
    #[test]
    fn anthropic(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        providers::fuzzing::anthropic(&data);
    }

    #[cfg(feature = "gemini")]
    #[test]
    fn gemini(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        providers::fuzzing::gemini(&data);
    }
}

/// Every recording replayed unchanged (structured mode, no cuts, recording `n`, then the
/// zeros of an exhausted input) decodes to a complete answer: the structured mode starts
/// from valid streams.
#[test]
fn unchanged_recordings_complete() {
    for stream in 0_u8..5 {
        let data = [1, 0, stream];
        #[cfg(feature = "openai")]
        assert!(providers::fuzzing::openai_chat(&data), "chat {stream}");
        #[cfg(feature = "openai")]
        assert!(
            providers::fuzzing::openai_responses(&data),
            "responses {stream}"
        );
        #[cfg(feature = "anthropic")]
        assert!(providers::fuzzing::anthropic(&data), "anthropic {stream}");
        #[cfg(feature = "gemini")]
        assert!(providers::fuzzing::gemini(&data), "gemini {stream}");
    }
}
