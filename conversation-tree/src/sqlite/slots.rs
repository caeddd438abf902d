//! Concurrency slots on SQLite: every claim in an immediate transaction on the one writer
//! connection, so claims of every process on the file are serialised by its write lock; times
//! from the store's [`Clock`](crate::runs::Clock).

use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{OptionalExtension as _, TransactionBehavior, params};

use super::SqliteStore;
use super::cached::Cached as _;
use crate::slots::{self, Slot, SlotStore};
use crate::{Result, runs};

#[async_trait]
impl SlotStore for SqliteStore {
    async fn claim_slot(
        &self,
        owner: &str,
        limit: u32,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Slot>> {
        const OPERATION: &str = "claiming a concurrency slot";
        slots::check_names(owner, holder)?;
        let (owner, holder) = (owner.to_owned(), holder.to_owned());
        let now = self.clock.now();
        let expires = runs::add(now, ttl);
        self.write(OPERATION, move |conn, ctx| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(ctx.sql(OPERATION))?;
            for index in 0..limit {
                tx.execute_cached(
                    "INSERT INTO token_slots (owner, slot) VALUES (?1, ?2) \
                     ON CONFLICT DO NOTHING",
                    params![owner, index],
                )
                .map_err(ctx.sql(OPERATION))?;
            }
            let free: Option<u32> = tx
                .query_row_cached(
                    "SELECT slot FROM token_slots WHERE owner = ?1 AND slot < ?2 \
                     AND (expires_us IS NULL OR expires_us <= ?3) ORDER BY slot LIMIT 1",
                    params![owner, limit, now.as_microsecond()],
                    |row| row.get(0),
                )
                .optional()
                .map_err(ctx.sql(OPERATION))?;
            let Some(index) = free else {
                return Ok(None);
            };
            let claim = slots::new_claim();
            tx.execute_cached(
                "UPDATE token_slots SET holder = ?3, claim = ?4, expires_us = ?5 \
                 WHERE owner = ?1 AND slot = ?2",
                params![owner, index, holder, claim, expires.as_microsecond()],
            )
            .map_err(ctx.sql(OPERATION))?;
            tx.commit().map_err(ctx.sql(OPERATION))?;
            Ok(Some(Slot {
                owner,
                index,
                holder,
                claim,
                expires,
            }))
        })
        .await
    }

    async fn renew_slots(&self, holder: &str, ttl: Duration) -> Result<u64> {
        const OPERATION: &str = "renewing concurrency slots";
        let holder = holder.to_owned();
        let now = self.clock.now();
        let expires = runs::add(now, ttl);
        self.write(OPERATION, move |conn, ctx| {
            let renewed = conn
                .execute_cached(
                    "UPDATE token_slots SET expires_us = ?2 WHERE holder = ?1 AND expires_us > ?3",
                    params![holder, expires.as_microsecond(), now.as_microsecond()],
                )
                .map_err(ctx.sql(OPERATION))?;
            Ok(renewed as u64)
        })
        .await
    }

    async fn release_slot(&self, slot: &Slot) -> Result<()> {
        const OPERATION: &str = "releasing a concurrency slot";
        let slot = slot.clone();
        self.write(OPERATION, move |conn, ctx| {
            conn.execute_cached(
                "UPDATE token_slots SET holder = NULL, claim = NULL, expires_us = NULL \
                 WHERE owner = ?1 AND slot = ?2 AND claim = ?3",
                params![slot.owner, slot.index, slot.claim],
            )
            .map_err(ctx.sql(OPERATION))?;
            Ok(())
        })
        .await
    }
}
