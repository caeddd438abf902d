//! The integration tests of `knowledge-base`, linked into one test binary: each file under
//! `tests/` is a module of this one, so the workspace links one executable per crate instead of
//! one per file.

#[macro_use]
#[path = "common/mod.rs"]
mod common;
#[path = "chunking.rs"]
mod chunking;
#[path = "documents.rs"]
mod documents;
#[cfg(feature = "postgres")]
#[path = "postgres.rs"]
mod postgres;
#[path = "sqlite.rs"]
mod sqlite;
#[path = "tool.rs"]
mod tool;
