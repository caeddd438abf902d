//! The integration tests of `messages`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "fuzz_targets.rs"]
mod fuzz_targets;
#[path = "transcript.rs"]
mod transcript;
