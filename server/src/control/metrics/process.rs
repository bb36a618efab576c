//! The process-wide metrics, kept in statics by the subsystems that count
//! them: the guard's limits, the DNS TCP slots and UPDATEs in progress, and
//! NOTIFY.
//!
//! ```text
//!  metrics ─► crate::guard::GUARD (TCP, UDP, transfer and control limits:
//!             counters) ─► tcp_connections, updates_in_progress (gauges)
//!             ─► crate::notify::NOTIFY (counters)
//! ```

use super::{counter, gauge, Metric};
use crate::guard::{GUARD, TCP_CONNECTIONS, UPDATES_IN_PROGRESS};
use crate::notify::NOTIFY;
use std::sync::atomic::Ordering;

/// The guard counters, the two gauges, then the NOTIFY counters.
pub(super) fn metrics() -> impl Iterator<Item = Metric> {
    let levels = [
        gauge(
            "tcp_connections",
            "DNS TCP connections holding a slot now",
            TCP_CONNECTIONS.load(Ordering::Relaxed),
        ),
        gauge(
            "updates_in_progress",
            "DNS UPDATEs being applied now, those waiting for the zone lock included",
            UPDATES_IN_PROGRESS.load(Ordering::Relaxed),
        ),
    ];
    let counters = |list: Vec<(&'static str, &'static str, u64)>| {
        list.into_iter()
            .map(|(name, help, value)| counter(name, help, value))
    };
    counters(GUARD.snapshot())
        .chain(levels)
        .chain(counters(NOTIFY.snapshot().to_vec()))
}
