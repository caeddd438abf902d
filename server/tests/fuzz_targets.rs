//! The `server_request` `cargo fuzz` target (`fuzz/fuzz_targets/server_request.rs`) as a bounded
//! proptest: the same function over random bytes, so CI runs what the fuzzer runs.

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn server_request(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
        server::fuzzing::request(&data);
    }
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
