//! `POST /v1/responses` bodies: the handler's parser, then the request's checks.
//! Body: `server::fuzzing::responses`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = server::fuzzing::responses(data);
});
