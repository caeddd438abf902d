//! The `server_request`, `chat_completion` and `responses` `cargo fuzz` targets (`fuzz/fuzz_targets/`) as
//! bounded proptests: the same functions over random bytes, so CI runs what the fuzzer runs.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn server_request(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        server::fuzzing::request(&data);
    }

    #[test]
    fn chat_completion(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        server::fuzzing::chat_completion(&data);
    }

    #[test]
    fn responses(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        server::fuzzing::responses(&data);
    }
}

/// The structured mode's template, unmutated (the zeros of an exhausted input), is a call.
#[test]
fn the_chat_template_is_a_call() {
    assert!(server::fuzzing::chat_completion(&[1]));
}

/// The Responses template, unmutated, is a call.
#[test]
fn the_responses_template_is_a_call() {
    assert!(server::fuzzing::responses(&[1]));
}

/// The structured mode starts from requests the server honours: the template unchanged with
/// each form of `input` (the first byte), no `X-Request-ID`, then the zeros of an exhausted
/// input, is planned where request base URLs are allowed.
#[test]
fn the_templates_are_plannable_requests() {
    for mode in [1, 5, 9] {
        assert!(server::fuzzing::request(&[mode, 0]) >= 1, "mode {mode}");
    }
}
