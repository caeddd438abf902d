//! How a read-only store reads a file nobody has open: as an immutable file, read again when a
//! writer changed it meanwhile.

use std::cell::Cell;

use super::{SqliteStore, file_uri, wal_files_exist};
use crate::{ConversationId, Result, Store};

fn count_conversations(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM conversations", [], |row| row.get(0))
        .unwrap()
}

/// A writer that starts, commits and closes during a read changes the file under the
/// immutable connection: the read is repeated and sees the write; nothing is left behind.
#[tokio::test]
async fn a_read_during_which_the_file_changed_is_repeated() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs.db");
    drop(SqliteStore::open(&path).await?);
    assert!(!wal_files_exist(&path));
    let store = SqliteStore::open_read_only(&path).await?;
    let inner = store.inner.clone();
    let writer_path = path.clone();
    let (calls, counted) = tokio::task::spawn_blocking(move || {
        let calls = Cell::new(0);
        let counted = inner.with_reader("test", |conn, _ctx| {
            calls.set(calls.get() + 1);
            let counted = count_conversations(conn);
            if calls.get() == 1 {
                // Another process writes, commits and closes: the last connection to close
                // checkpoints into the file and deletes its -wal and -shm.
                let writer = rusqlite::Connection::open(&writer_path).unwrap();
                writer
                    .execute(
                        "INSERT INTO conversations (id, name, created_utc, updated_utc) \
                         VALUES ('new', NULL, '2030-01-01T00:00:00.000000Z', \
                         '2030-01-01T00:00:00.000000Z')",
                        [],
                    )
                    .unwrap();
                drop(writer);
            }
            Ok(counted)
        });
        (calls.get(), counted)
    })
    .await
    .unwrap();
    assert_eq!(calls, 2, "the read was not repeated");
    assert_eq!(counted?, 1);
    assert!(!wal_files_exist(&path));
    let listed = store.conversations(10).await?;
    assert_eq!(listed[0].id, ConversationId::new("new")?);
    Ok(())
}

#[test]
fn paths_become_percent_encoded_file_uris() {
    let path = std::path::Path::new("/tmp/a dir/100%?#x.db");
    assert_eq!(file_uri(path), "file:/tmp/a%20dir/100%25%3F%23x.db");
    let path = std::path::Path::new("relative/logs-1_a.b~c");
    assert_eq!(file_uri(path), "file:relative/logs-1_a.b~c");
}

/// A file whose name needs escaping in a URI is read through the immutable connection.
#[tokio::test]
async fn a_file_with_uri_characters_in_its_name_opens() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd ?#%name.db");
    drop(SqliteStore::open(&path).await?);
    let store = SqliteStore::open_read_only(&path).await?;
    assert!(store.conversations(10).await?.is_empty());
    assert!(!wal_files_exist(&path));
    Ok(())
}
