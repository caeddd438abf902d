//! The integration tests of `toolchain`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[path = "common/mod.rs"]
mod common;
#[path = "customer_flow.rs"]
mod customer_flow;
#[path = "describe.rs"]
mod describe;
#[path = "fuzz.rs"]
mod fuzz;
#[path = "fuzz_targets.rs"]
mod fuzz_targets;
#[path = "matrix.rs"]
mod matrix;
#[path = "native.rs"]
mod native;
#[path = "sources.rs"]
mod sources;
#[path = "text_calls.rs"]
mod text_calls;
#[path = "toolset.rs"]
mod toolset;
