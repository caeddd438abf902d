//! `POST /v1/response` bodies: the handler's parser, then planning.
//! Body: `server::fuzzing::request`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = server::fuzzing::request(data);
});
