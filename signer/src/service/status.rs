//! What the service did and will do, per zone: shared by the workers and
//! the control endpoint, written out as Prometheus text.
//!
//! ```text
//!  worker ─► Status::update(zone, |s| …) ─► map (one lock, held briefly)
//!  /metrics ─► Status::metrics() ─► one series per zone and what
//! ```

use dns::Name;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

/// One series of a zone: its labels and value, if it has one.
type Row<'a> = &'a dyn Fn(&str, &ZoneStatus) -> Option<(String, f64)>;

/// One zone as the service sees it.
#[derive(Clone, Debug, Default)]
pub struct ZoneStatus {
    /// This process looks after the zone (holds its service lease).
    pub signing: bool,
    /// Who holds it, when another does.
    pub holder: Option<String>,
    /// The zone's policy, if any.
    pub policy: Option<String>,
    /// The next timed key step: when (seconds since the epoch) and what.
    pub next: Option<(i64, String)>,
    /// What the zone waits for from outside (the parent's DS).
    pub waiting: Option<String>,
    /// The earliest signature expiration (seconds since the epoch).
    pub earliest_expiry: Option<i64>,
    /// The last fault: when and what.
    pub last_error: Option<(i64, String)>,
    /// Signatures made.
    pub signatures: u64,
    /// Signatures made by refreshes.
    pub refreshed: u64,
    /// Node documents read by refreshes (only those due).
    pub refresh_reads: u64,
    /// Node documents read by every pass (follow, whole and refresh).
    pub nodes_read: u64,
    /// Key steps taken (created, moved, removed).
    pub key_steps: u64,
    /// False once the worker stopped (the zone gone or unsecured).
    pub watched: bool,
}

/// Every zone's status, shared.
#[derive(Clone, Debug, Default)]
pub struct Status(Arc<Mutex<BTreeMap<String, ZoneStatus>>>);

impl Status {
    /// Changes the status of `zone`.
    pub fn update(&self, zone: &Name, f: impl FnOnce(&mut ZoneStatus)) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(map.entry(zone.to_string()).or_default());
    }

    /// True while a worker watches `zone`.
    pub fn is_watched(&self, zone: &Name) -> bool {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&zone.to_string()).is_some_and(|s| s.watched)
    }

    /// A copy of every zone's status.
    pub fn snapshot(&self) -> BTreeMap<String, ZoneStatus> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The Prometheus text exposition of every zone's status.
    pub fn metrics(&self) -> String {
        let mut out = String::new();
        let zones = self.snapshot();
        let mut family = |name: &str, help: &str, kind: &str, rows: Vec<(String, f64)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in rows {
                let _ = writeln!(out, "{name}{{{labels}}} {v}");
            }
        };
        let each = |f: Row| {
            zones
                .iter()
                .filter_map(|(z, s)| f(z, s))
                .collect::<Vec<_>>()
        };
        let zl = |z: &str| format!("zone=\"{}\"", escape(z));
        family(
            "mongodns_signer_zone_signing",
            "1 while this process looks after the zone (its service lease), 0 on standby",
            "gauge",
            each(&|z, s| Some((zl(z), f64::from(u8::from(s.signing))))),
        );
        family(
            "mongodns_signer_next_event_timestamp_seconds",
            "when the zone's next key step is due",
            "gauge",
            each(&|z, s| {
                let (t, what) = s.next.as_ref()?;
                Some((format!("{},event=\"{}\"", zl(z), escape(what)), *t as f64))
            }),
        );
        family(
            "mongodns_signer_waiting",
            "1 while a rollover waits for the parent",
            "gauge",
            each(&|z, s| {
                let why = s.waiting.as_ref()?;
                Some((format!("{},for=\"{}\"", zl(z), escape(why)), 1.0))
            }),
        );
        family(
            "mongodns_signer_earliest_expiration_timestamp_seconds",
            "the earliest expiration among the zone's signatures",
            "gauge",
            each(&|z, s| Some((zl(z), s.earliest_expiry? as f64))),
        );
        family(
            "mongodns_signer_last_error_timestamp_seconds",
            "when the zone's last fault happened, and what it was",
            "gauge",
            each(&|z, s| {
                let (t, e) = s.last_error.as_ref()?;
                Some((format!("{},error=\"{}\"", zl(z), escape(e)), *t as f64))
            }),
        );
        for (name, help, get) in [
            (
                "mongodns_signer_signatures_total",
                "signatures made",
                (|s: &ZoneStatus| s.signatures) as fn(&ZoneStatus) -> u64,
            ),
            (
                "mongodns_signer_refreshed_signatures_total",
                "signatures made because the old ones fell due",
                |s| s.refreshed,
            ),
            (
                "mongodns_signer_refresh_nodes_read_total",
                "node documents the refreshes read (only those with a signature due)",
                |s| s.refresh_reads,
            ),
            (
                "mongodns_signer_nodes_read_total",
                "node documents read by every pass: following writers, whole passes, refreshes",
                |s| s.nodes_read,
            ),
            (
                "mongodns_signer_key_steps_total",
                "keys created, moved to another state or removed",
                |s| s.key_steps,
            ),
        ] {
            family(
                name,
                help,
                "counter",
                each(&|z, s| Some((zl(z), get(s) as f64))),
            );
        }
        out
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
