//! Which zones are served, at which generation, kept fresh by polling.
//!
//! ```text
//!  Store ─► poll.rs (meta.seq, change records, zones {gen > last})
//!              │ deleted / changed zones, narrowed to names (narrowing.rs)
//!              ▼
//!           registry.rs ZoneRegistry: apex ─► ZoneState { info, gen }
//!              │  (name_scope.rs: which names each change touched)
//!              ├─► events.rs: ZoneEvent ─► resident zones (before serving)
//!              │              NodePurge ─► record cache
//!              │              serial moved ─► NOTIFY out
//!              ▼
//!           find_zone / lookups (record cache, packet cache, pipeline)
//! ```
//!
//! Files: `registry.rs` (what is served now: zones, non-zones, generations,
//! purges), `poll.rs` (the poller and the preload), `events.rs` (who hears
//! a change, and what), `narrowing.rs` (which names a polled change
//! touched, and which changes wait for a generation not yet accounted
//! for), `name_scope.rs` (which cached replies outlive a change).

pub mod events;
pub mod name_scope;
pub mod narrowing;
mod poll;
pub mod registry;

pub use events::{NodePurge, NodePurger, SerialWatcher, ZoneEvent, ZoneListener};
pub use registry::{Known, ZoneRegistry, ZoneState};

/// A zone at version 1, serial 1, generation `gen` (the registry's and the
/// poller's unit tests).
#[cfg(test)]
fn test_info(apex: &str, gen: i64) -> dns::ZoneInfo {
    dns::ZoneInfo {
        apex: apex.parse().unwrap(),
        ver: 1,
        gen,
        serial: 1,
    }
}
