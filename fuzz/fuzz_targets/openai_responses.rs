//! OpenAI Responses API stream decoding.
//! Body: `providers::fuzzing::openai_responses`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = providers::fuzzing::openai_responses(data);
});
