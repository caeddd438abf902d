//! Concurrency slots on PostgreSQL: a claim is one `UPDATE` of the lowest free slot picked
//! `FOR UPDATE SKIP LOCKED`, with times from the server's `now()`. Statements are prepared once
//! per pooled connection, so a claim and a release are one round trip each.

use std::time::Duration;

use async_trait::async_trait;

use super::{PostgresStore, pg};
use crate::Result;
use crate::slots::{self, Slot, SlotStore};

/// The lowest free slot of `$1` below `$2`, claimed for holder `$3` under claim `$4` for `$5`
/// microseconds. Racing claimants skip the rows another one has locked, so each locks a
/// different row; a row claimed by a transaction that committed after this statement's snapshot
/// is checked again once locked, and passed over when it is no longer free.
const CLAIM: &str = "UPDATE token_slots SET holder = $3, claim = $4, \
     expires = now() + $5::bigint * interval '1 microsecond' \
     WHERE (owner, slot) = (SELECT owner, slot FROM token_slots \
         WHERE owner = $1 AND slot < $2 AND (expires IS NULL OR expires <= now()) \
         ORDER BY slot LIMIT 1 FOR UPDATE SKIP LOCKED) \
     RETURNING slot, expires";

/// Creates the owner's rows `0..$2` it lacks. Rows are never deleted (one per slot of each
/// configured token), so after an owner's first admission this inserts nothing.
const ENSURE: &str = "INSERT INTO token_slots (owner, slot) \
     SELECT $1, generate_series(0, $2 - 1) ON CONFLICT DO NOTHING";

const RENEW: &str = "UPDATE token_slots SET expires = now() + $2::bigint * interval '1 microsecond' \
     WHERE holder = $1 AND expires > now()";

const RELEASE: &str = "UPDATE token_slots SET holder = NULL, claim = NULL, expires = NULL \
     WHERE owner = $1 AND slot = $2 AND claim = $3";

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

#[async_trait]
impl SlotStore for PostgresStore {
    async fn claim_slot(
        &self,
        owner: &str,
        limit: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Slot>> {
        const OPERATION: &str = "claiming a concurrency slot";
        slots::check_names(owner, holder)?;
        self.writable(OPERATION)?;
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let claim = slots::new_claim();
        let client = self.client(OPERATION).await?;
        let statement = client.prepare_cached(CLAIM).await.map_err(pg(OPERATION))?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&owner, &limit, &holder, &claim, &micros(ttl)];
        let mut row = client
            .query_opt(&statement, &params)
            .await
            .map_err(pg(OPERATION))?;
        if row.is_none() {
            // The owner's first admission (or a raised limit): its rows are missing. Claimants
            // racing here all wait for the one insert to commit, then claim again, so the
            // first requests of an owner are counted as exactly as the later ones.
            let ensure = client.prepare_cached(ENSURE).await.map_err(pg(OPERATION))?;
            client
                .execute(&ensure, &[&owner, &limit])
                .await
                .map_err(pg(OPERATION))?;
            row = client
                .query_opt(&statement, &params)
                .await
                .map_err(pg(OPERATION))?;
        }
        let Some(row) = row else { return Ok(None) };
        let index: i32 = row.try_get(0).map_err(pg(OPERATION))?;
        Ok(Some(Slot {
            owner: owner.to_owned(),
            index: u32::try_from(index).unwrap_or_default(),
            holder: holder.to_owned(),
            claim,
            expires: row.try_get(1).map_err(pg(OPERATION))?,
        }))
    }

    async fn renew_slots(&self, holder: &str, ttl: Duration) -> Result<u64> {
        const OPERATION: &str = "renewing concurrency slots";
        self.writable(OPERATION)?;
        let client = self.client(OPERATION).await?;
        let statement = client.prepare_cached(RENEW).await.map_err(pg(OPERATION))?;
        client
            .execute(&statement, &[&holder, &micros(ttl)])
            .await
            .map_err(pg(OPERATION))
    }

    async fn release_slot(&self, slot: &Slot) -> Result<()> {
        const OPERATION: &str = "releasing a concurrency slot";
        self.writable(OPERATION)?;
        let index = i32::try_from(slot.index).unwrap_or(i32::MAX);
        let client = self.client(OPERATION).await?;
        let statement = client
            .prepare_cached(RELEASE)
            .await
            .map_err(pg(OPERATION))?;
        client
            .execute(&statement, &[&slot.owner, &index, &slot.claim])
            .await
            .map_err(pg(OPERATION))?;
        Ok(())
    }
}
