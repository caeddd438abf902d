//! OpenAI Chat Completions stream decoding (with DeepSeek's `reasoning_content`).
//! Body: `providers::fuzzing::openai_chat`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = providers::fuzzing::openai_chat(data);
});
