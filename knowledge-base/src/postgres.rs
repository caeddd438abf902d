//! [`PostgresKnowledge`]: knowledge bases in the conversation store's PostgreSQL database,
//! searched with a `tsvector` column (GIN index), `websearch_to_tsquery` and `ts_rank_cd`.
//!
//! The tables `kb_meta`, `kb_bases`, `kb_documents` and `kb_chunks` are the knowledge bases'
//! own, created with `IF NOT EXISTS` and versioned in `kb_meta`; the conversation tree's
//! `skein_meta` and tables are never touched, and the tree opens the database as before.

use std::sync::LazyLock;

use async_trait::async_trait;
use conversation_tree::migrate::{self, Schema};
use conversation_tree::pg_connect::PgConnect;
use deadpool_postgres::{GenericClient, Pool};

use crate::KbError;
use crate::document::{Span, SpanKind};
use crate::error::{Backend, check_base_name, redact};
use crate::storage::{Prepared, Search, Storage, count, schema, schema_error};
use crate::store::{AddReport, BaseSummary, Passage};

/// Connections a store opens at most.
const POOL_SIZE: usize = 8;

/// The text search configuration: English stemming and stop words.
const CONFIG: &str = "english";

/// The search: the best `$3` chunks of the bases `$2` for the web-search query `$1`. Built
/// once; each connection prepares it once (`prepare_cached`).
static SEARCH_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT b.name, d.title, d.location, d.kind, c.span_start, c.span_end, c.body,
                    ts_rank_cd(c.tsv, q.query)::float8 AS score
             FROM websearch_to_tsquery('{CONFIG}', $1) AS q (query)
             JOIN kb_chunks AS c ON c.tsv @@ q.query
             JOIN kb_documents AS d ON d.id = c.document_id
             JOIN kb_bases AS b ON b.id = d.base_id
             WHERE b.name = ANY ($2)
             ORDER BY score DESC, c.id
             LIMIT $3"
    )
});

/// A document's chunks, each with the `tsvector` of its text and (weighted lower) of the
/// document's title `$2`, in the order of the arrays `$3`, `$4`, `$5`. Built once; each
/// connection prepares it once.
static INSERT_CHUNKS_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO kb_chunks (document_id, span_start, span_end, body, tsv)
         SELECT $1, chunk.span_start, chunk.span_end, chunk.body,
                setweight(to_tsvector('{CONFIG}', $2), 'C')
                || setweight(to_tsvector('{CONFIG}', chunk.body), 'A')
         FROM unnest($3::integer[], $4::integer[], $5::text[])
              WITH ORDINALITY AS chunk (span_start, span_end, body, ordinal)
         ORDER BY chunk.ordinal"
    )
});

/// The knowledge tables in PostgreSQL.
const SCHEMA: Schema = schema(&[SCHEMA_V1]);

/// Schema version 1.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS kb_bases (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_utc TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS kb_documents (
    id BIGSERIAL PRIMARY KEY,
    base_id BIGINT NOT NULL REFERENCES kb_bases (id) ON DELETE CASCADE,
    location TEXT NOT NULL,
    title TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('lines', 'pages')),
    chunks INTEGER NOT NULL,
    added_utc TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (base_id, location)
);
CREATE TABLE IF NOT EXISTS kb_chunks (
    id BIGSERIAL PRIMARY KEY,
    document_id BIGINT NOT NULL REFERENCES kb_documents (id) ON DELETE CASCADE,
    span_start INTEGER NOT NULL,
    span_end INTEGER NOT NULL,
    body TEXT NOT NULL,
    tsv TSVECTOR NOT NULL
);
CREATE INDEX IF NOT EXISTS kb_chunks_tsv ON kb_chunks USING GIN (tsv);
CREATE INDEX IF NOT EXISTS kb_chunks_document ON kb_chunks (document_id);
";

/// Knowledge bases in a PostgreSQL database (feature `postgres`), normally the conversation
/// store's.
///
/// Used through [`KnowledgeStore`](crate::KnowledgeStore), which it converts into
/// (`KnowledgeStore::from`). TLS is not built in, as for the conversation store: connect over a private network, a Unix
/// socket or loopback. Cheap to clone: clones share a pool of up to 8 connections.
#[derive(Clone)]
pub struct PostgresKnowledge {
    pool: Pool,
    location: String,
}

impl std::fmt::Debug for PostgresKnowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresKnowledge")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// Maps a PostgreSQL error met while doing `operation`.
fn pg<E: std::error::Error + Send + Sync + 'static>(
    operation: &'static str,
) -> impl Fn(E) -> KbError {
    move |error| KbError::database(Backend::Postgres, operation, error)
}

impl PostgresKnowledge {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname` or the
    /// `key=value` form) and creates the knowledge tables if missing, in one transaction under
    /// an advisory lock (replicas starting together create them once). Tables named `kb_*`
    /// without `kb_meta`, or with a `kb_meta` of another application, are refused
    /// ([`KbError::NotAStore`]) and left untouched; knowledge tables of a newer Skein are
    /// [`KbError::NewerSchema`]. TLS follows the URL's `sslmode` and `sslrootcert`, as for
    /// the conversation store ([`conversation_tree::pg_connect`]).
    pub async fn connect(url: &str) -> Result<Self, KbError> {
        let pool = PgConnect::parse(url)
            .map_err(pg("reading the connection URL"))?
            .pool(POOL_SIZE)
            .map_err(pg("building the pool"))?;
        let store = PostgresKnowledge {
            pool,
            location: redact(url),
        };
        let mut client = store.client("connecting").await?;
        migrate(&mut client, &store.location).await?;
        Ok(store)
    }

    /// The database's URL, without its password.
    pub fn location(&self) -> &str {
        &self.location
    }

    async fn client(&self, operation: &'static str) -> Result<deadpool_postgres::Client, KbError> {
        self.pool
            .get()
            .await
            .map_err(|err| pg(operation)(conversation_tree::pg_connect::WithCauses::new(&err)))
    }
}

#[async_trait]
impl Storage for PostgresKnowledge {
    fn location(&self) -> &str {
        PostgresKnowledge::location(self)
    }

    async fn add(&self, base: &str, prepared: Vec<Prepared>) -> Result<AddReport, KbError> {
        const OPERATION: &str = "adding documents";
        let sql = pg(OPERATION);
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(&sql)?;
        let base_id: i64 = tx
            .query_one(
                "INSERT INTO kb_bases (name) VALUES ($1)
                 ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
                 RETURNING id",
                &[&base],
            )
            .await
            .map_err(&sql)?
            .get(0);
        // Prepared once per connection, not once per document: a statement given as text is
        // parsed by the server on every call, one more round trip each.
        let delete_document = tx
            .prepare_cached("DELETE FROM kb_documents WHERE base_id = $1 AND location = $2")
            .await
            .map_err(&sql)?;
        let insert_document = tx
            .prepare_cached(
                "INSERT INTO kb_documents (base_id, location, title, kind, chunks)
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .await
            .map_err(&sql)?;
        let insert_chunks = tx.prepare_cached(&INSERT_CHUNKS_SQL).await.map_err(&sql)?;
        let mut report = AddReport::default();
        for document in prepared {
            let deleted = tx
                .execute(&delete_document, &[&base_id, &document.location])
                .await
                .map_err(&sql)?;
            if deleted > 0 {
                report.replaced += 1;
            }
            let count = i32::try_from(document.chunks.len()).unwrap_or(i32::MAX);
            let document_id: i64 = tx
                .query_one(
                    &insert_document,
                    &[
                        &base_id,
                        &document.location,
                        &document.title,
                        &document.kind,
                        &count,
                    ],
                )
                .await
                .map_err(&sql)?
                .get(0);
            if !document.chunks.is_empty() {
                let starts: Vec<i32> = document
                    .chunks
                    .iter()
                    .map(|(span, _)| i32::try_from(span.start).unwrap_or(i32::MAX))
                    .collect();
                let ends: Vec<i32> = document
                    .chunks
                    .iter()
                    .map(|(span, _)| i32::try_from(span.end).unwrap_or(i32::MAX))
                    .collect();
                let bodies: Vec<&str> = document
                    .chunks
                    .iter()
                    .map(|(_, text)| text.as_str())
                    .collect();
                tx.execute(
                    &insert_chunks,
                    &[&document_id, &document.title, &starts, &ends, &bodies],
                )
                .await
                .map_err(&sql)?;
            }
            report.documents += 1;
            report.chunks += document.chunks.len();
            if document.chunks.is_empty() {
                report.empty.push(document.location);
            }
        }
        tx.commit().await.map_err(&sql)?;
        Ok(report)
    }

    async fn candidates(&self, search: Search) -> Result<Vec<Passage>, KbError> {
        const OPERATION: &str = "searching";
        let sql = pg(OPERATION);
        let client = self.client(OPERATION).await?;
        if !search.admit(&known_bases(&client).await?)? {
            return Ok(Vec::new());
        }
        let statement = client.prepare_cached(&SEARCH_SQL).await.map_err(&sql)?;
        let rows = client
            .query(
                &statement,
                &[&search.phrases.websearch(), &search.bases, &search.wanted()],
            )
            .await
            .map_err(&sql)?;
        let mut found = Vec::with_capacity(rows.len());
        for row in rows {
            let kind: String = row.try_get(3).map_err(&sql)?;
            let start: i32 = row.try_get(4).map_err(&sql)?;
            let end: i32 = row.try_get(5).map_err(&sql)?;
            let span = Span {
                kind: SpanKind::parse(&kind).unwrap_or(SpanKind::Lines),
                start: u32::try_from(start).unwrap_or(0),
                end: u32::try_from(end).unwrap_or(0),
            };
            let document: String = row.try_get(2).map_err(&sql)?;
            found.push(Passage {
                base: row.try_get(0).map_err(&sql)?,
                title: row.try_get(1).map_err(&sql)?,
                location: format!("{document}:{span}"),
                document,
                span,
                text: row.try_get(6).map_err(&sql)?,
                score: row.try_get(7).map_err(&sql)?,
            });
        }
        Ok(found)
    }

    async fn list(&self) -> Result<Vec<BaseSummary>, KbError> {
        const OPERATION: &str = "listing knowledge bases";
        let sql = pg(OPERATION);
        let client = self.client(OPERATION).await?;
        let rows = client
            .query(
                "SELECT b.name, count(d.id), coalesce(sum(d.chunks), 0)::bigint
                 FROM kb_bases AS b LEFT JOIN kb_documents AS d ON d.base_id = b.id
                 GROUP BY b.id ORDER BY b.name",
                &[],
            )
            .await
            .map_err(&sql)?;
        rows.iter()
            .map(|row| {
                Ok(BaseSummary {
                    name: row.try_get(0).map_err(&sql)?,
                    documents: count(row.try_get(1).map_err(&sql)?),
                    chunks: count(row.try_get(2).map_err(&sql)?),
                })
            })
            .collect()
    }

    async fn remove(&self, base: &str) -> Result<BaseSummary, KbError> {
        const OPERATION: &str = "removing a knowledge base";
        let sql = pg(OPERATION);
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(&sql)?;
        let row = tx
            .query_opt(
                "SELECT b.id, count(d.id), coalesce(sum(d.chunks), 0)::bigint
                 FROM kb_bases AS b LEFT JOIN kb_documents AS d ON d.base_id = b.id
                 WHERE b.name = $1 GROUP BY b.id",
                &[&base],
            )
            .await
            .map_err(&sql)?;
        let Some(row) = row else {
            let known = known_bases(&tx).await?;
            check_base_name(base)?;
            return Err(KbError::UnknownBase {
                name: base.to_owned(),
                known,
            });
        };
        let base_id: i64 = row.try_get(0).map_err(&sql)?;
        let summary = BaseSummary {
            name: base.to_owned(),
            documents: count(row.try_get(1).map_err(&sql)?),
            chunks: count(row.try_get(2).map_err(&sql)?),
        };
        // Documents and chunks go by ON DELETE CASCADE.
        tx.execute("DELETE FROM kb_bases WHERE id = $1", &[&base_id])
            .await
            .map_err(&sql)?;
        tx.commit().await.map_err(&sql)?;
        Ok(summary)
    }
}

async fn known_bases(client: &impl GenericClient) -> Result<Vec<String>, KbError> {
    let statement = client
        .prepare_cached("SELECT name FROM kb_bases ORDER BY name")
        .await
        .map_err(pg("listing knowledge bases"))?;
    let rows = client
        .query(&statement, &[])
        .await
        .map_err(pg("listing knowledge bases"))?;
    rows.iter()
        .map(|row| row.try_get(0).map_err(pg("listing knowledge bases")))
        .collect()
}

/// Creates the knowledge tables or checks their version, in one transaction under an advisory
/// lock; a refusal rolls it back.
async fn migrate(client: &mut deadpool_postgres::Client, location: &str) -> Result<(), KbError> {
    migrate::postgres::migrate(client, &SCHEMA)
        .await
        .map_err(|error| schema_error(location, error, pg("creating the knowledge tables")))?;
    Ok(())
}
