//! Anthropic Messages stream decoding.
//! Body: `providers::fuzzing::anthropic`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = providers::fuzzing::anthropic(data);
});
