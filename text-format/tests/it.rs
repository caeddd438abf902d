//! The integration tests of `text-format`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "fuzz_targets.rs"]
mod fuzz_targets;
#[path = "markdown.rs"]
mod markdown;
#[path = "properties.rs"]
mod properties;
#[path = "snapshots.rs"]
mod snapshots;
#[path = "xml.rs"]
mod xml;
