//! [`RunsConfig`]: how long a replica's hold on a run lasts, how long finished runs are kept,
//! and how often a run's events are written.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// The `runs` section of a configuration: leases, retention and event batching.
///
/// Durations are written as seconds (`10`) or with units (`10s`, `24h`, `1h 30m`):
///
/// ```
/// use std::time::Duration;
///
/// let config: service::RunsConfig = serde_json::from_str(r#"{"lease_ttl": "5s", "retention": "2h"}"#)?;
/// assert_eq!(config.lease_ttl, Duration::from_secs(5));
/// assert_eq!(config.retention, Duration::from_secs(7200));
/// assert!(config.problems().is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunsConfig {
    /// How long a replica's hold on a run lasts unless renewed (it renews every third of it).
    /// A replica that dies has its background runs taken over by another within about one
    /// and a half of it: default 10 s, so within 15 s.
    #[serde(deserialize_with = "duration")]
    pub lease_ttl: Duration,
    /// How long a finished run and its stored events are kept (default 24 h); unfinished runs
    /// are always kept.
    #[serde(deserialize_with = "duration")]
    pub retention: Duration,
    /// How long a background run's events wait before they are written (default 20 ms): the
    /// replica's event writer stores what its runs pushed in one transaction, a background
    /// run's within this window, since its clients read them from the store as they come. A
    /// foreground run's wait up to 250 ms (nobody reads them while the run streams to its
    /// client); a run's are written at once when it ends or pauses.
    #[serde(deserialize_with = "duration")]
    pub batch: Duration,
}

/// The default [`RunsConfig::lease_ttl`].
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);
/// The default [`RunsConfig::retention`].
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// The default [`RunsConfig::batch`].
pub const DEFAULT_BATCH: Duration = Duration::from_millis(20);

impl Default for RunsConfig {
    fn default() -> Self {
        RunsConfig {
            lease_ttl: DEFAULT_LEASE_TTL,
            retention: DEFAULT_RETENTION,
            batch: DEFAULT_BATCH,
        }
    }
}

impl RunsConfig {
    /// Everything wrong with it, each naming its field (`runs.lease_ttl`, …): empty when it is
    /// usable.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.lease_ttl < Duration::from_secs(1) {
            problems.push(format!(
                "`runs.lease_ttl` is {:?}; it must be at least 1s, or a replica busy for a \
                 moment would lose its runs to another",
                self.lease_ttl
            ));
        }
        if self.lease_ttl > Duration::from_secs(3600) {
            problems.push(format!(
                "`runs.lease_ttl` is {:?}; at most 1h, or the runs of a replica that died wait \
                 that long for another",
                self.lease_ttl
            ));
        }
        if self.retention < Duration::from_secs(60) {
            problems.push(format!(
                "`runs.retention` is {:?}; keep finished runs at least 60s, or clients could not \
                 read what they just started",
                self.retention
            ));
        }
        if self.batch.is_zero() || self.batch * 3 > self.lease_ttl {
            problems.push(format!(
                "`runs.batch` is {:?}; it must be more than 0 and at most a third of \
                 `runs.lease_ttl`",
                self.batch
            ));
        }
        problems
    }
}

/// A duration from whole seconds or a string with units (`10s`, `24h`, `1h 30m`).
pub(crate) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Text(String),
    }
    match Raw::deserialize(deserializer)? {
        Raw::Seconds(secs) => Ok(Duration::from_secs(secs)),
        Raw::Text(text) => text
            .trim()
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|signed| Duration::try_from(signed).ok())
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "`{text}` is not a duration: write seconds (`10`) or with units (`10s`, \
                     `500ms`, `24h`)"
                ))
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_seconds_or_with_units() {
        let config: RunsConfig =
            serde_json::from_str(r#"{"lease_ttl": 4, "retention": "1h 30m", "batch": "50ms"}"#)
                .unwrap();
        assert_eq!(config.lease_ttl, Duration::from_secs(4));
        assert_eq!(config.retention, Duration::from_secs(5400));
        assert_eq!(config.batch, Duration::from_millis(50));
        let error = serde_json::from_str::<RunsConfig>(r#"{"lease_ttl": "soon"}"#).unwrap_err();
        assert!(
            error.to_string().contains("`soon` is not a duration"),
            "{error}"
        );
    }

    #[test]
    fn the_yaml_section_reads_as_documented() {
        let config: RunsConfig =
            serde_saphyr::from_str("lease_ttl: 10s\nretention: 24h\nbatch: 20ms\n").unwrap();
        assert_eq!(config, RunsConfig::default());
    }

    #[test]
    fn every_problem_is_named_at_once() {
        let config = RunsConfig {
            lease_ttl: Duration::from_millis(10),
            retention: Duration::from_secs(1),
            batch: Duration::ZERO,
        };
        let problems = config.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("runs.lease_ttl"));
        assert!(problems[1].contains("runs.retention"));
        assert!(problems[2].contains("runs.batch"));
        assert!(RunsConfig::default().problems().is_empty());
    }
}
