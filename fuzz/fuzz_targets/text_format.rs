//! TextFormat parsing (Markdown and XML sections).
//! Body: `text_format::fuzzing::parse`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = text_format::fuzzing::parse(data);
});
