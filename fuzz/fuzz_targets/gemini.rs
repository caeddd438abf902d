//! Gemini `alt=sse` stream decoding.
//! Body: `providers::fuzzing::gemini`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = providers::fuzzing::gemini(data);
});
