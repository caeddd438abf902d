//! What both stores share: checks of names, and a run read back from its columns.

use jiff::Timestamp;

use super::{Lease, Run, RunMode, RunProtocol, RunStatus};
use crate::{NodeId, Result, StoreError};

/// The columns of a `runs` row, as both stores read them (times already converted).
pub(crate) struct RunRow {
    pub(crate) id: String,
    pub(crate) owner: String,
    pub(crate) protocol: String,
    pub(crate) mode: String,
    pub(crate) status: String,
    pub(crate) spec_json: String,
    pub(crate) continues_from: Option<i64>,
    pub(crate) last_node: Option<i64>,
    pub(crate) cancel_requested: bool,
    pub(crate) error: Option<String>,
    pub(crate) created: Timestamp,
    pub(crate) updated: Timestamp,
    pub(crate) finished: Option<Timestamp>,
    pub(crate) last_seq: Option<i64>,
    pub(crate) lease_holder: Option<String>,
    pub(crate) lease_epoch: i64,
    pub(crate) lease_expires: Option<Timestamp>,
    pub(crate) paused_json: Option<String>,
    pub(crate) decide_by: Option<Timestamp>,
}

impl RunRow {
    /// The run, or [`StoreError::Corrupt`] naming the column that cannot be read.
    pub(crate) fn into_run(self) -> Result<Run> {
        let id = self.id;
        let corrupt = |reason: String| StoreError::Corrupt {
            what: format!("run {id:?}"),
            reason,
        };
        let status = RunStatus::parse(&self.status)
            .ok_or_else(|| corrupt(format!("unknown status {:?}", self.status)))?;
        let protocol = RunProtocol::parse(&self.protocol)
            .ok_or_else(|| corrupt(format!("unknown protocol {:?}", self.protocol)))?;
        let mode = RunMode::parse(&self.mode)
            .ok_or_else(|| corrupt(format!("unknown mode {:?}", self.mode)))?;
        let spec = serde_json::from_str(&self.spec_json)
            .map_err(|err| corrupt(format!("its spec is not JSON: {err}")))?;
        let paused = self
            .paused_json
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|err| corrupt(format!("its paused document is not JSON: {err}")))?;
        let continues_from = self.continues_from.map(NodeId::from_db);
        let last_node = self.last_node.map(NodeId::from_db);
        let last_seq = self
            .last_seq
            .map(|raw| {
                u64::try_from(raw).map_err(|_| corrupt(format!("last_seq {raw} is negative")))
            })
            .transpose()?;
        let lease = match (self.lease_holder, self.lease_expires) {
            (Some(holder), Some(expires)) => Some(Lease {
                run: id.clone(),
                holder,
                epoch: u64::try_from(self.lease_epoch).unwrap_or(0),
                expires,
            }),
            _ => None,
        };
        Ok(Run {
            owner: self.owner,
            protocol,
            mode,
            status,
            spec,
            continues_from,
            last_node,
            cancel_requested: self.cancel_requested,
            error: self.error,
            created: self.created,
            updated: self.updated,
            finished: self.finished,
            last_seq,
            lease,
            paused,
            decide_by: self.decide_by,
            id,
        })
    }
}

/// Checks a run id.
pub(crate) fn check_run_id(id: &str) -> Result<()> {
    check_name("run id", id)
}

/// Checks a replica name.
pub(crate) fn check_replica(replica: &str) -> Result<()> {
    check_name("replica name", replica)
}

fn check_name(what: &'static str, name: &str) -> Result<()> {
    match crate::store::name_problem(name) {
        Some((len, reason)) => Err(StoreError::InvalidRunName { what, len, reason }),
        None => Ok(()),
    }
}

/// The transition `update` asks of a run in status `from`, refused when illegal (a pause
/// without its document included).
pub(crate) fn check_transition(
    run: &str,
    from: RunStatus,
    update: &super::RunUpdate,
) -> Result<Option<RunStatus>> {
    match update.status {
        Some(to) if !from.can_become(to) || (to == RunStatus::Paused && update.pause.is_none()) => {
            Err(StoreError::IllegalRunTransition {
                run: run.to_owned(),
                from,
                to,
            })
        }
        other => Ok(other),
    }
}

/// A count or limit as a database integer.
pub(crate) fn limit(limit: usize, most: usize) -> i64 {
    i64::try_from(limit.min(most)).unwrap_or(i64::MAX)
}
