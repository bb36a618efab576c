//! What NOTIFY out did, for `/metrics`.
//!
//! ```text
//!  exchange.rs: each datagram sent ─► sent; a matching NOERROR reply ─► acknowledged;
//!     an error reply, or no reply after the last retry ─► failed
//!  schedule.rs: a publish folded into a NOTIFY still to come ─► coalesced
//!  NOTIFY.snapshot() ─► control/metrics/process.rs (mongodns_notify_*)
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

/// NOTIFY counters, each since start.
pub struct NotifyCounters {
    /// NOTIFY datagrams sent (retries included).
    pub sent: AtomicU64,
    /// NOTIFYs a secondary acknowledged (NOERROR, same ID, opcode NOTIFY).
    pub acknowledged: AtomicU64,
    /// NOTIFYs given up on: an error reply, or no reply after every retry.
    pub failed: AtomicU64,
    /// Serial changes folded into a later NOTIFY by the per-zone rate bound.
    pub coalesced: AtomicU64,
}

/// The process's NOTIFY counters.
pub static NOTIFY: NotifyCounters = NotifyCounters {
    sent: AtomicU64::new(0),
    acknowledged: AtomicU64::new(0),
    failed: AtomicU64::new(0),
    coalesced: AtomicU64::new(0),
};

impl NotifyCounters {
    /// Every counter as (name, help, value).
    pub fn snapshot(&self) -> [(&'static str, &'static str, u64); 4] {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        [
            (
                "notify_sent",
                "NOTIFY datagrams sent to secondaries, retries included",
                load(&self.sent),
            ),
            (
                "notify_acknowledged",
                "NOTIFYs a secondary acknowledged",
                load(&self.acknowledged),
            ),
            (
                "notify_failed",
                "NOTIFYs given up on: an error reply or no reply after every retry",
                load(&self.failed),
            ),
            (
                "notify_coalesced",
                "serial changes folded into a later NOTIFY by the per-zone rate bound",
                load(&self.coalesced),
            ),
        ]
    }
}

/// Adds one to `counter`.
pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
