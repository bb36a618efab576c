//! The control endpoint: counters and cache purges over plain HTTP.
//!
//! ```text
//!  GET  /stats                      counters as JSON
//!  GET  /metrics                    the same, Prometheus text format, plus
//!                                   queries by transport/type/rcode, query
//!                                   log, kernel UDP drops, job progress
//!  GET  /health                     200 while the database is being polled,
//!                                   503 when the last good poll is too old
//!  POST /purge                      drop every cached reply and node
//!  POST /purge?name=www.example.com drop one name (any type, any zone)
//!  POST /purge?zone=example.com     drop one zone's answers
//! ```
//!
//! Off by default (`--control-listen`); bind it to loopback or a management
//! network only. `POST /purge` needs the `--control-token` (serve.rs: axum
//! routes over `http::serve_bounded`); the
//! read-only pages stay open.
//!
//! Files: this one holds what the endpoint sees (`Control`), `/health` and
//! the purges; `serve.rs` the HTTP (connections, limits, routing, the
//! token); `metrics/` the numbers (`snapshot`, each typed counter or
//! gauge, from a table per subsystem; the resident zones' in
//! `metrics/residency.rs`) and their two formats.

mod metrics;
mod serve;

pub use metrics::{Metric, MetricKind};
pub use serve::{serve_control, ControlLimits};

use crate::cache::{Counters, PacketCache, RecordCache};
use crate::observe::QueryMetrics;
use crate::querylog::QueryLog;
use crate::resident::Residency;
use crate::zones::ZoneRegistry;
use backend_mongo::{JobProgress, Store};
use dns::Name;
use std::sync::Arc;
use std::time::Duration;

/// What the control endpoint can see and purge.
pub struct Control {
    /// The packet cache.
    pub packets: Arc<PacketCache>,
    /// The record cache.
    pub records: Arc<RecordCache<Store>>,
    /// Zone generations.
    pub registry: Arc<ZoneRegistry>,
    /// Shared counters.
    pub counters: Arc<Counters>,
    /// Resident zones, if on.
    pub residency: Option<Arc<Residency>>,
    /// Per-query counters (transport, type, rcode), if counted.
    pub queries: Option<Arc<QueryMetrics>>,
    /// The query log, if on.
    pub query_log: Option<Arc<QueryLog>>,
    /// The database, for job progress on `/metrics`.
    pub store: Option<Store>,
    /// Resident zones given series of their own on `/metrics` (the
    /// largest); the rest are summed.
    pub zone_series: usize,
    /// `/health` fails when the last good change poll is older than this.
    pub health_max_lag: Duration,
    /// When the server started.
    pub started: std::time::Instant,
}

impl Control {
    /// Every job's progress (empty without a database or on error).
    pub async fn jobs(&self) -> Vec<JobProgress> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        match tokio::time::timeout(Duration::from_secs(1), store.list_progress()).await {
            Ok(Ok(jobs)) => jobs,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "cannot read job progress");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// `/health`: (healthy, explanation).
    pub fn health(&self) -> (bool, String) {
        match self.registry.poll_age() {
            Some(age) if age <= self.health_max_lag => (
                true,
                format!("ok: database polled {} ms ago\n", age.as_millis()),
            ),
            Some(age) => (
                false,
                format!(
                    "unhealthy: last good database poll {} ms ago (limit {} ms)\n{}",
                    age.as_millis(),
                    self.health_max_lag.as_millis(),
                    self.resident_note()
                ),
            ),
            None => (false, "unhealthy: database not polled yet\n".into()),
        }
    }

    /// What `/health` adds while the database is away and zones are
    /// resident: they answer on, possibly out of date.
    fn resident_note(&self) -> String {
        let held = self.residency.as_ref().map_or(0, |r| r.summary(0).resident);
        match held {
            0 => String::new(),
            n => format!("{n} resident zones answer from memory: their data may be stale\n"),
        }
    }

    /// Purges by name, by zone, or everything; returns a JSON summary.
    pub fn purge(&self, name: Option<&str>, zone: Option<&str>) -> Result<String, String> {
        match (name, zone) {
            (Some(n), None) => {
                let name: Name = n.parse().map_err(|e| format!("bad name {n:?}: {e}"))?;
                let replies = self.packets.purge_name(name.as_wire());
                let nodes = self.records.purge_name(&name);
                if let Some(residency) = &self.residency {
                    residency.purge_name(&name);
                }
                Ok(format!(
                    "{{\"purged_replies\":{replies},\"purged_nodes\":{nodes}}}"
                ))
            }
            (None, Some(z)) => {
                let apex: Name = z.parse().map_err(|e| format!("bad zone {z:?}: {e}"))?;
                if self.registry.purge_zone(&apex) {
                    Ok("{\"purged_zone\":true}".into())
                } else {
                    Ok("{\"purged_zone\":false,\"note\":\"zone not cached\"}".into())
                }
            }
            (None, None) => {
                let replies = self.packets.purge_all();
                let nodes = self.records.purge_all();
                Ok(format!(
                    "{{\"purged_replies\":{replies},\"purged_nodes\":{nodes}}}"
                ))
            }
            (Some(_), Some(_)) => Err("give name= or zone=, not both".into()),
        }
    }
}
