//! Canonical transcript JSON: read, and round-trip what is accepted.
//! Body: `messages::fuzzing::transcript`, also run in CI as a proptest.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = messages::fuzzing::transcript(data);
});
