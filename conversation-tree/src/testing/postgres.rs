//! Fresh PostgreSQL databases for tests.

use std::sync::atomic::{AtomicU32, Ordering};

/// Creates an empty database on the test server ([`postgres_url`](super::postgres_url)) and
/// returns its URL, so each test starts from a blank store.
///
/// # Panics
///
/// When the server cannot be reached or the database cannot be created.
pub async fn fresh_postgres_database() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = super::postgres_url();
    let name = format!(
        "skein_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        uuid::Uuid::new_v4().simple()
    );
    let (client, connection) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|err| panic!("cannot connect to the test server {base}: {err}"));
    let connection = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap_or_else(|err| panic!("cannot create test database {name}: {err}"));
    drop(client);
    let _ = connection.await;
    with_database(&base, &name)
}

/// `url` pointing at database `name` instead.
fn with_database(url: &str, name: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (location, query) = match rest.split_once('?') {
                Some((location, query)) => (location, Some(query)),
                None => (rest, None),
            };
            let authority = location.split_once('/').map_or(location, |(host, _)| host);
            let query = query.map(|query| format!("?{query}")).unwrap_or_default();
            return format!("{scheme}{authority}/{name}{query}");
        }
    }
    // The key=value form: a later key wins.
    format!("{url} dbname={name}")
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn with_database_replaces_the_database_and_keeps_the_rest() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5433/postgres", "t1"),
            "postgres://postgres@127.0.0.1:5433/t1"
        );
        assert_eq!(
            with_database("postgresql://u:p@h:1/db?sslmode=disable", "t2"),
            "postgresql://u:p@h:1/t2?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "t3"), "postgres://h/t3");
        assert_eq!(
            with_database("host=h user=u", "t4"),
            "host=h user=u dbname=t4"
        );
    }
}
