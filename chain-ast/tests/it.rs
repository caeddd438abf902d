//! The integration tests of `chain-ast`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "bad_input.rs"]
mod bad_input;
#[path = "common/mod.rs"]
mod common;
#[path = "conformance.rs"]
mod conformance;
#[path = "conformance_helpers.rs"]
mod conformance_helpers;
#[path = "display.rs"]
mod display;
#[path = "id_template.rs"]
mod id_template;
#[path = "properties.rs"]
mod properties;
#[path = "rules.rs"]
mod rules;
#[path = "summarize.rs"]
mod summarize;
