//! Tool-call text: the `action` section read by the JSON and YAML call parsers.
//! Body: `toolchain::fuzzing::action`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = toolchain::fuzzing::action(data);
});
