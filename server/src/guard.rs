//! Counters of what the abuse limits refused or cut (and how IXFR was
//! answered), for `/metrics`.
//!
//! ```text
//!  frontend (TCP slots, UDP miss tasks, worker restarts) ─┐
//!  pipeline (zone transfers)                              ├─► GUARD ─► control: /stats, /metrics
//!  control endpoint, HTTP API (connections, tokens)       ┘
//!  TCP connections holding a slot now ─► TCP_CONNECTIONS (a gauge)
//!  DNS UPDATEs being applied now ─► UPDATES_IN_PROGRESS (a gauge)
//! ```
//!
//! One process-wide set: the limits live in different layers, and each only
//! adds to its own counter.

use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! guard_counters {
    ($( $(#[doc = $doc:literal])* $name:ident ),* $(,)?) => {
        /// What the limits did, each counter since start.
        #[derive(Default)]
        pub struct GuardCounters {
            $( $(#[doc = $doc])* pub $name: AtomicU64, )*
        }

        impl GuardCounters {
            /// Every counter as (name, help, value).
            pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
                vec![$( (stringify!($name), concat!($($doc),*).trim(), self.$name.load(Ordering::Relaxed)), )*]
            }
        }

        /// The process's counters.
        pub static GUARD: GuardCounters = GuardCounters { $( $name: AtomicU64::new(0), )* };
    };
}

guard_counters! {
    /// TCP connections closed because a message was not read or written within the I/O timeout
    tcp_io_timeouts,
    /// TCP connections closed when idle (the idle timeout shrinks as slots fill)
    tcp_idle_closes,
    /// TCP connections closed at the whole-connection deadline
    tcp_deadline_closes,
    /// TCP connections closed because no slot freed within the permit timeout
    tcp_permit_timeouts,
    /// TCP connections refused because their source prefix had its share of slots
    tcp_prefix_refusals,
    /// TCP connections cut because their unread replies passed the pending-bytes cap
    tcp_pending_cuts,
    /// DNS TCP connections told to close for a newcomer, every slot taken (the oldest of the prefix holding the most; HTTP listeners count theirs in control_evictions and api_evictions)
    tcp_evictions,
    /// UDP cache misses refused (dropped) because every miss task slot was busy
    udp_miss_overflows,
    /// UDP worker loops restarted after a panic
    udp_worker_restarts,
    /// UDP cache misses whose answer panicked when first run in the receive loop (nothing sent)
    udp_miss_panics,
    /// zone transfers refused because the connection already runs one
    axfr_busy_connection,
    /// zone transfers refused because the global transfer cap was reached
    axfr_busy_global,
    /// zone transfers aborted (no closing SOA) because their version began to be deleted
    axfr_aborted,
    /// zone transfers failed on a record too large for a message
    axfr_oversized,
    /// IXFR requests answered with the journal's changes only (over TCP or UDP)
    ixfr_incremental,
    /// IXFR requests answered with the whole zone (the journal did not reach their serial)
    ixfr_full,
    /// IXFR requests over UDP answered with the journal's changes in one datagram (also in ixfr_incremental)
    ixfr_udp,
    /// IXFR requests over UDP answered with the SOA alone though behind (no journal to their serial, or the changes do not fit): the client asks again over TCP
    ixfr_udp_to_tcp,
    /// control connections refused at the connection cap
    control_refused,
    /// control requests refused for a missing or wrong token
    control_unauthorized,
    /// control accept errors (the endpoint backs off and continues)
    control_accept_errors,
    /// control connections without a whole request head closed for a newcomer, every slot taken (the oldest of the prefix holding the most)
    control_evictions,
    /// HTTP API connections refused at the connection cap
    api_refused,
    /// HTTP API requests refused for a missing or wrong X-API-Key
    api_unauthorized,
    /// HTTP API requests answered 429 unchecked: their source sent too many wrong keys
    api_throttled,
    /// HTTP API accept errors (the listener backs off and continues)
    api_accept_errors,
    /// HTTP API connections without a whole request head closed for a newcomer, every slot taken (the oldest of the prefix holding the most)
    api_evictions,
}

/// TCP connections holding a slot of a DNS listener now (a gauge, for
/// `/stats`: tests and operators see when every slot is taken).
pub static TCP_CONNECTIONS: AtomicU64 = AtomicU64::new(0);

/// DNS UPDATEs being applied now, waiting for the zone lock included (a
/// gauge, for `/stats`).
pub static UPDATES_IN_PROGRESS: AtomicU64 = AtomicU64::new(0);

/// One unit of a gauge ([`TCP_CONNECTIONS`], [`UPDATES_IN_PROGRESS`]),
/// counted while this lives.
pub struct InProgress(&'static AtomicU64);

impl InProgress {
    /// Adds one to `gauge` until the value is dropped.
    pub fn count(gauge: &'static AtomicU64) -> InProgress {
        gauge.fetch_add(1, Ordering::Relaxed);
        InProgress(gauge)
    }
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Adds one to `counter`.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
