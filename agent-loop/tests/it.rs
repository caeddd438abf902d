//! The integration tests of `agent-loop`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[macro_use]
#[path = "common/mod.rs"]
mod common;
#[path = "approval.rs"]
mod approval;
#[path = "cancel.rs"]
mod cancel;
#[path = "compression.rs"]
mod compression;
#[path = "interrupted.rs"]
mod interrupted;
#[path = "properties.rs"]
mod properties;
#[path = "replay.rs"]
mod replay;
#[path = "rounds.rs"]
mod rounds;
#[path = "store.rs"]
mod store;
#[path = "store_reuse_options.rs"]
mod store_reuse_options;
#[path = "summarizer_options.rs"]
mod summarizer_options;
#[path = "text_mode.rs"]
mod text_mode;
#[path = "typed.rs"]
mod typed;
