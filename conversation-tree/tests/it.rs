//! The integration tests of `conversation-tree`, linked into one test binary: each file under `tests/`
//! is a module of this one, so the workspace links one executable per crate instead of one per
//! file (each is tens of megabytes, and CI machines have little disk to spare).

#[macro_use]
#[path = "common/mod.rs"]
mod common;
#[cfg(feature = "postgres")]
#[path = "postgres.rs"]
mod postgres;
#[path = "read_only.rs"]
mod read_only;
#[path = "sqlite.rs"]
mod sqlite;
#[cfg(feature = "postgres")]
#[path = "tls.rs"]
mod tls;
