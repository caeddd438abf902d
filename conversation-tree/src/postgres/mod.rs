//! `PostgresStore`: the same store on PostgreSQL, for several server replicas at once.
//!
//! Connections come from a deadpool pool. Every write is one transaction. Writes that must
//! not race (a supplied branch created once, a cache hit recorded against what is stored)
//! first take a transaction-scoped advisory lock on the conversation, so replicas serialise
//! per conversation and nowhere else. Hashing and JSON run on tokio's blocking pool; the
//! async workers only wait for the database.

mod listen;
mod run_events;
mod runs;
mod schema;
mod slots;
mod tx;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use messages::Message;
use tokio_postgres::IsolationLevel;

use crate::record::{self, NodeRow};
use crate::walk::{self, Mode, Plan, Progress, Step};
use crate::{
    Backend, Call, CallOptions, ConversationId, ConversationSummary, NewResponse, Node, NodeId,
    PathMatch, PathSummary, Result, Store, StoreError, Turn, VerifyReport,
};

use tx::PgTx;

/// Connections a store opens at most, unless given its own pool.
const DEFAULT_POOL_SIZE: usize = 16;

/// A conversation-tree store in a PostgreSQL database (feature `postgres`).
///
/// Connecting checks the database first: one that holds tables of another application, or a
/// Skein schema newer than this build, is refused ([`StoreError::NotAStore`],
/// [`StoreError::NewerSchema`]) and left untouched. Migrations run in one transaction under an
/// advisory lock, so replicas starting together migrate once.
///
/// TLS follows the URL's `sslmode` and `sslrootcert`, as libpq reads them
/// ([`pg_connect`](crate::pg_connect)): `?sslmode=verify-full&sslrootcert=/etc/skein/ca.pem`
/// for replicas that reach the database over a network. Cheap to clone.
///
/// Readers that must never write connect with [`PostgresStore::connect_read_only`].
///
/// Run changes ([`RunStore::run_changes`](crate::RunStore::run_changes)) arrive through one
/// more connection, opened by the first follower and kept until the last clone is dropped.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    location: String,
    /// Opened with [`PostgresStore::connect_read_only`].
    read_only: bool,
    /// The connection that hears other replicas' run changes.
    listener: std::sync::Arc<listen::Listener>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/dbname` or the
    /// `key=value` form, TLS as its `sslmode` says) with a pool of 16 connections, and brings
    /// its schema up to date.
    pub async fn connect(url: &str) -> Result<Self> {
        let connect = parse(url)?;
        let location = connect.describe();
        let pool = Self::pool(&connect)?;
        let listener = listen::Listener::new(Some(connect));
        Self::open(pool, location, listener).await
    }

    /// Connects to the database at `url` for reading only, as
    /// [`SqliteStore::open_read_only`](crate::SqliteStore::open_read_only) opens a file:
    /// nothing is ever written. Every session starts with `default_transaction_read_only =
    /// on`, so the server itself refuses writes; the schema is checked, never migrated (an
    /// empty database is [`StoreError::NoStore`], an older schema [`StoreError::OlderSchema`]);
    /// writes through the store fail with [`StoreError::ReadOnly`].
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), conversation_tree::StoreError> {
    /// use conversation_tree::{PostgresStore, Store};
    ///
    /// let store = PostgresStore::connect_read_only("postgres://skein@db.local/skein").await?;
    /// for summary in store.conversations(10).await? {
    ///     println!("{} {:?}", summary.id, summary.damaged);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_read_only(url: &str) -> Result<Self> {
        let mut connect = parse(url)?;
        let location = connect.describe();
        let config = connect.config_mut();
        let options = match config.get_options() {
            Some(options) if !options.trim().is_empty() => {
                format!("{options} -c default_transaction_read_only=on")
            }
            _ => "-c default_transaction_read_only=on".to_owned(),
        };
        config.options(options);
        let store = PostgresStore {
            pool: Self::pool(&connect)?,
            listener: listen::Listener::new(Some(connect)),
            location,
            read_only: true,
        };
        let client = store.client("connecting").await?;
        schema::check_read_only(&client, &store.location).await?;
        Ok(store)
    }

    fn pool(connect: &crate::pg_connect::PgConnect) -> Result<Pool> {
        connect
            .pool(DEFAULT_POOL_SIZE)
            .map_err(|err| StoreError::database(Backend::Postgres, "building the pool", err))
    }

    /// Uses `pool` (its size, timeouts and TLS are the caller's) and brings the schema up to
    /// date.
    ///
    /// A pool does not say where it connects, so such a store cannot `LISTEN`: followers of
    /// its runs ([`RunStore::run_changes`](crate::RunStore::run_changes)) are told to read the
    /// store again once a second instead of when another replica writes.
    pub async fn from_pool(pool: Pool) -> Result<Self> {
        let location = "the PostgreSQL database of the given pool".to_owned();
        Self::open(pool, location, listen::Listener::new(None)).await
    }

    async fn open(
        pool: Pool,
        location: String,
        listener: std::sync::Arc<listen::Listener>,
    ) -> Result<Self> {
        let store = PostgresStore {
            pool,
            location,
            read_only: false,
            listener,
        };
        let mut client = store.client("connecting").await?;
        schema::migrate(&mut client, &store.location).await?;
        Ok(store)
    }

    /// [`StoreError::ReadOnly`] when the store was opened read-only.
    fn writable(&self, operation: &'static str) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                location: self.location.clone(),
                operation,
            });
        }
        Ok(())
    }

    async fn client(&self, operation: &'static str) -> Result<deadpool_postgres::Client> {
        self.pool.get().await.map_err(|err| {
            let err = crate::pg_connect::WithCauses::new(&err);
            StoreError::database(Backend::Postgres, operation, err)
        })
    }
}

/// Reads a connection URL and sets up its TLS.
fn parse(url: &str) -> Result<crate::pg_connect::PgConnect> {
    crate::pg_connect::PgConnect::parse(url)
        .map_err(|err| StoreError::database(Backend::Postgres, "reading the connection URL", err))
}

fn pg(operation: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |err| StoreError::database(Backend::Postgres, operation, err)
}

/// Runs CPU work (hashing, JSON) on the blocking pool.
async fn cpu<R: Send + 'static>(
    operation: &'static str,
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| StoreError::Worker {
            operation,
            reason: err.to_string(),
        })
}

#[async_trait]
impl Store for PostgresStore {
    async fn find_or_create_path_after(
        &self,
        conversation: &ConversationId,
        after: Option<NodeId>,
        messages: &[Message],
        options: &CallOptions,
    ) -> Result<PathMatch> {
        const OPERATION: &str = "matching a message array";
        let owned = (messages.to_vec(), options.clone());
        let (messages, options, plan) = cpu(OPERATION, move || {
            let (messages, options) = owned;
            let plan = Plan::new(&messages, &options);
            (messages, options, plan)
        })
        .await?;
        let mut client = self.client(OPERATION).await?;
        let read = PgTx::new(&client, OPERATION);
        let start = Progress::after(&read, conversation, after).await?;
        let walk = walk::walk(
            &read,
            conversation,
            &messages,
            &plan,
            &options,
            Mode::Read,
            start,
        );
        let progress = match walk.await? {
            Step::Done(found) => return Ok(found),
            Step::NeedsWrite(progress) => progress,
        };
        self.writable(OPERATION)?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let write = PgTx::new(&tx, OPERATION);
        let mode = Mode::Write { at: record::now() };
        let step = walk::walk(
            &write,
            conversation,
            &messages,
            &plan,
            &options,
            mode,
            progress,
        );
        let step = step.await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        match step {
            Step::Done(found) => Ok(found),
            Step::NeedsWrite(_) => Err(StoreError::Worker {
                operation: OPERATION,
                reason: "a walk holding the conversation lock still asked for it".to_owned(),
            }),
        }
    }

    async fn log_response(&self, response: NewResponse) -> Result<Node> {
        const OPERATION: &str = "logging a response";
        self.writable(OPERATION)?;
        let now = record::now();
        let (row, name) = cpu(OPERATION, move || {
            let name = record::conversation_name(&response.input);
            NodeRow::from_response(response, now).map(|row| (row, name))
        })
        .await??;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        let node = walk::log(&PgTx::new(&tx, OPERATION), row, name.as_deref()).await?;
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(node)
    }

    async fn node(&self, id: NodeId) -> Result<Option<Node>> {
        let client = self.client("reading a response").await?;
        tx::node(&client, "reading a response", id).await
    }

    async fn node_by_label(&self, label: &str) -> Result<Option<Node>> {
        const OPERATION: &str = "finding a labelled response";
        crate::store::check_label(label)?;
        let client = self.client(OPERATION).await?;
        tx::node_by_label(&client, OPERATION, label).await
    }

    async fn label_node(&self, label: &str, node: NodeId) -> Result<()> {
        const OPERATION: &str = "labelling a response";
        crate::store::check_label(label)?;
        self.writable(OPERATION)?;
        let mut client = self.client(OPERATION).await?;
        let tx = client.transaction().await.map_err(pg(OPERATION))?;
        walk::label(&PgTx::new(&tx, OPERATION), label, node).await?;
        tx.commit().await.map_err(pg(OPERATION))
    }

    async fn turn(&self, id: NodeId) -> Result<Turn> {
        let client = self.client("reading a turn").await?;
        tx::turn(&client, id).await
    }

    async fn children(&self, id: NodeId) -> Result<Vec<Node>> {
        let client = self.client("listing children").await?;
        tx::children(&client, id).await
    }

    async fn roots(&self, conversation: &ConversationId) -> Result<Vec<Node>> {
        let client = self.client("listing roots").await?;
        tx::roots(&client, conversation).await
    }

    async fn path_to_root(&self, id: NodeId) -> Result<Vec<Node>> {
        let client = self.client("reading a path").await?;
        tx::path_to_root(&client, id).await
    }

    async fn path_summary(&self, id: NodeId) -> Result<Option<PathSummary>> {
        const OPERATION: &str = "reading a path's summary";
        let client = self.client(OPERATION).await?;
        let row = tx::path_summary_row(&client, id).await?;
        drop(client);
        let Some((node, replaces, hash, json)) = row else {
            return Ok(None);
        };
        cpu(OPERATION, move || {
            record::summary_from_columns(node, replaces, hash, &json)
        })
        .await?
        .map(Some)
    }

    async fn messages_for_path(&self, id: NodeId) -> Result<Vec<Message>> {
        const OPERATION: &str = "reading a path's messages";
        let client = self.client(OPERATION).await?;
        let rows = tx::path_json(&client, id).await?;
        drop(client);
        cpu(OPERATION, move || {
            let mut messages = Vec::new();
            for (node, input, response) in rows {
                let turn = record::turn_from_json(node, &input, &response)?;
                messages.extend(turn.input);
                messages.push(turn.response);
            }
            Ok(messages)
        })
        .await?
    }

    async fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>> {
        let client = self.client("listing conversations").await?;
        tx::conversations(&client, None, limit).await
    }

    async fn conversation(&self, id: &ConversationId) -> Result<Option<ConversationSummary>> {
        let client = self.client("reading a conversation").await?;
        Ok(tx::conversations(&client, Some(id), 1).await?.pop())
    }

    async fn conversation_nodes(&self, conversation: &ConversationId) -> Result<Vec<Node>> {
        let client = self.client("listing a conversation").await?;
        tx::conversation_nodes(&client, conversation).await
    }

    async fn latest_node(&self, conversation: &ConversationId) -> Result<Option<Node>> {
        let client = self.client("finding the latest response").await?;
        tx::latest_node(&client, conversation).await
    }

    async fn calls(&self, conversation: &ConversationId) -> Result<Vec<Call>> {
        let client = self.client("listing calls").await?;
        tx::calls(&client, conversation).await
    }

    async fn claim_conversation(
        &self,
        conversation: &ConversationId,
        owner: &str,
    ) -> Result<crate::Claim> {
        crate::store::check_owner(owner)?;
        let client = self.client("claiming a conversation").await?;
        tx::claim_conversation(&client, conversation, owner, crate::record::now()).await
    }

    async fn lookup_path_hash(&self, path_hash: &str) -> Result<Vec<Node>> {
        let client = self.client("looking up a path hash").await?;
        tx::lookup_path_hash(&client, path_hash).await
    }

    async fn verify(&self) -> Result<VerifyReport> {
        const OPERATION: &str = "verifying the store";
        let mut client = self.client(OPERATION).await?;
        // One snapshot for the whole pass, read in batches.
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(pg(OPERATION))?;
        let mut report = VerifyReport::default();
        let mut after = 0;
        loop {
            let batch = tx::stored_rows(&tx, after).await?;
            let Some(last) = batch.last() else { break };
            after = last.id.get();
            let checked = cpu(OPERATION, move || {
                let count = batch.len() as u64;
                (
                    count,
                    batch
                        .into_iter()
                        .filter_map(record::check)
                        .collect::<Vec<_>>(),
                )
            })
            .await?;
            report.checked += checked.0;
            report.problems.extend(checked.1);
        }
        tx.commit().await.map_err(pg(OPERATION))?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests;
