//! The control endpoint's numbers: every metric typed as a counter or a
//! gauge, gathered from each subsystem's list in one order, shown as
//! `/stats` JSON and as the Prometheus text format.
//!
//! ```text
//!  Control::snapshot ─► caches.rs   packet cache, record cache, denial cache
//!                       database.rs zones, database reads
//!                       answering.rs queries, query log, serving
//!                       residency.rs resident zones
//!                       process.rs  guard limits, TCP slots, UPDATEs, NOTIFY
//!                       (each a table of Reading: name, help, kind, how to
//!                        read it ─► Metric: name, help, kind, value)
//!  /stats   ─► json: {"name":value,…}
//!  /metrics ─► prometheus (exposition.rs, on prometheus-client): labelled
//!              families first (queries by transport/type/rcode, drops;
//!              snmp.rs: kernel UDP errors; build info, job progress;
//!              residency.rs: resident zones), then every Metric with its
//!              # TYPE, then the database latency histogram
//! ```
//!
//! A counter only grows while the process runs (hits, misses, errors,
//! lines written); a gauge is a level that moves both ways (entries held,
//! reads in flight, 0/1 states). The names predate the types and stay as
//! dashboards know them (no `_total` suffix on the unlabelled counters).
//! To add a metric, add a line to its subsystem's table (its help as the
//! line's doc comment): `/stats` and `/metrics` follow.

/// A subsystem's table of [`Reading`]s, a line a metric: its doc comment
/// is its help, then its name, kind and how to read it
/// (`name: Counter = |c| …;`).
macro_rules! readings {
    ($($(#[doc = $help:literal])+ $name:ident: $kind:ident = $value:expr;)*) => {
        [$((
            stringify!($name),
            concat!($($help),+).trim_ascii(),
            super::MetricKind::$kind,
            $value,
        )),*]
    };
}

mod answering;
mod caches;
mod database;
mod exposition;
mod process;
mod residency;
mod snmp;

use super::Control;
use backend_mongo::JobProgress;
use prometheus_client::metrics::MetricType;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use exposition::{family, sample};

/// How Prometheus reads a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Only grows while the process runs (`rate()` applies).
    Counter,
    /// A level: goes up and down.
    Gauge,
}

impl MetricKind {
    /// The type of a `# TYPE` line.
    pub fn metric_type(self) -> MetricType {
        match self {
            MetricKind::Counter => MetricType::Counter,
            MetricKind::Gauge => MetricType::Gauge,
        }
    }
}

/// One unlabelled number of `/stats` and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    /// The name, without the `mongodns_` prefix `/metrics` adds.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// The value now.
    pub value: u64,
}

/// A metric that only grows.
fn counter(name: &'static str, help: &'static str, value: u64) -> Metric {
    Metric {
        name,
        help,
        kind: MetricKind::Counter,
        value,
    }
}

/// A metric that moves both ways.
fn gauge(name: &'static str, help: &'static str, value: u64) -> Metric {
    Metric {
        name,
        help,
        kind: MetricKind::Gauge,
        value,
    }
}

/// One line of a subsystem's table: name, help, kind, and how to read the
/// value from what the endpoint sees.
type Reading = (&'static str, &'static str, MetricKind, fn(&Control) -> u64);

/// An atomic's value now.
fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

impl Control {
    /// Every unlabelled metric, in the order `/stats` and `/metrics` show them.
    pub fn snapshot(&self) -> Vec<Metric> {
        let tables: [&[Reading]; 8] = [
            caches::PACKET_CACHE,
            caches::RECORD_CACHE,
            caches::DENIAL_CACHE,
            database::ZONES,
            database::DATABASE,
            answering::QUERIES,
            answering::QUERY_LOG,
            answering::SERVING,
        ];
        let mut all = Vec::with_capacity(64);
        for table in tables {
            all.extend(table.iter().map(|&(name, help, kind, value)| Metric {
                name,
                help,
                kind,
                value: value(self),
            }));
        }
        all.extend(self.resident_metrics());
        all.extend(process::metrics());
        all
    }

    /// `/stats`: every unlabelled metric as one JSON object.
    pub(super) fn json(&self) -> String {
        let mut out = String::from("{");
        for (i, m) in self.snapshot().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{}\":{}", m.name, m.value);
        }
        out.push('}');
        out
    }

    /// `/metrics`: the Prometheus text format (`jobs`: job progress read
    /// from the database).
    pub(super) fn prometheus(self: &Arc<Self>, jobs: Vec<JobProgress>) -> String {
        exposition::prometheus(self, jobs)
    }
}
