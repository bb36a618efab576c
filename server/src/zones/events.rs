//! Who hears the registry's changes, and what each is told.
//!
//! ```text
//!  ZoneRegistry (a poll, a purge, a deletion)
//!     ─► ZoneListener   ZoneEvent::{Changed, Removed, Purged, AllPurged}
//!                        before the new generation is served (resident zones)
//!     ─► NodePurger     NodePurge::{Names, OtherVersions} (the record cache)
//!     ─► SerialWatcher  a zone whose SOA serial moved, or that appeared
//!                        (NOTIFY out)
//! ```
//!
//! Each is registered once, at start; none may block.

use super::registry::ZoneRegistry;
use dns::{Name, ZoneInfo};

/// What a change of one zone drops from the record cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodePurge<'a> {
    /// The named nodes of the current version (a logged change).
    Names(&'a [Name]),
    /// Every node of the zone's other versions: a new version is served,
    /// and nodes keyed by an old one could never be served again.
    OtherVersions,
}

/// Drops nodes of (zone apex, current version) from a record cache.
pub type NodePurger = Box<dyn Fn(&Name, i64, NodePurge<'_>) + Send + Sync>;

/// Told of every zone whose SOA serial a poll saw move, or that appeared
/// (NOTIFY out, `crate::notify`); must not block.
pub type SerialWatcher = Box<dyn Fn(&ZoneInfo) + Send + Sync>;

/// A change of the registry's view of one zone (or of all), told to the
/// change listener before answers can see the new generation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZoneEvent<'a> {
    /// A known zone moved from `from` to `to`; `names` lists what changed
    /// when the change records account for it (same version only).
    Changed {
        /// The zone as held before.
        from: &'a ZoneInfo,
        /// The zone as served from now on.
        to: &'a ZoneInfo,
        /// The names changed, or `None`: anything may have changed.
        names: Option<&'a [Name]>,
    },
    /// The zone is no longer served (deleted).
    Removed(&'a Name),
    /// The zone's cached answers were purged (`POST /purge?zone=`).
    Purged(&'a Name),
    /// Everything was purged (`POST /purge`): every zone is read again.
    AllPurged,
}

/// Hears every [`ZoneEvent`] (resident zones register one; once).
pub type ZoneListener = Box<dyn Fn(ZoneEvent<'_>) + Send + Sync>;

impl ZoneRegistry {
    /// Sets what drops nodes of a zone from the record cache (the record
    /// cache registers itself; once).
    pub fn set_node_purger(&self, purge: NodePurger) {
        let _ = self.node_purger.set(purge);
    }

    /// Sets who is told of moved serials (the notifier registers itself; once).
    pub fn set_serial_watcher(&self, watch: SerialWatcher) {
        let _ = self.serial_watcher.set(watch);
    }

    pub(super) fn tell_serial(&self, info: &ZoneInfo) {
        if let Some(watch) = self.serial_watcher.get() {
            watch(info);
        }
    }

    /// Sets what hears every zone change before it is served (once).
    pub fn set_listener(&self, listener: ZoneListener) {
        let _ = self.listener.set(listener);
    }

    pub(super) fn tell(&self, event: ZoneEvent<'_>) {
        if let Some(listener) = self.listener.get() {
            listener(event);
        }
    }
}
