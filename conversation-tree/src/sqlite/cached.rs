//! [`Cached`]: statements run through the connection's statement cache.
//!
//! `Connection::execute` and `Connection::query_row` compile their SQL on every call; a run's
//! record is written three or four times per request, so each of those statements is compiled
//! once per connection here instead of once per request.

use rusqlite::{CachedStatement, Connection, Params, Row};

/// [`Connection::execute`] and [`Connection::query_row`] through
/// [`Connection::prepare_cached`].
pub(super) trait Cached {
    /// Runs `sql` with `params`; the number of rows changed.
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// The first row `sql` returns with `params`, read by `read`
    /// ([`rusqlite::Error::QueryReturnedNoRows`] when there is none).
    fn query_row_cached<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T>;
}

impl Cached for Connection {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)
            .and_then(|mut statement: CachedStatement<'_>| statement.execute(params))
    }

    fn query_row_cached<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        self.prepare_cached(sql)
            .and_then(|mut statement| statement.query_row(params, read))
    }
}
