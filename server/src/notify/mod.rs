//! NOTIFY out (RFC 1996): telling secondaries that a zone changed.
//!
//! ```text
//!  registry poll (zones/poll.rs) sees a zone's serial move (any writer:
//!  import, record edit, signer) or a zone appear ─► Notifier::zone_changed
//!     ─► schedule.rs: one slot per zone, the latest serial kept
//!        no round running ─► a task: round now
//!        a round ran less than `interval` ago ─► folded into the next round
//!           (coalesced: a burst of publishes makes one NOTIFY per interval,
//!           and the last serial is always notified)
//!     round: targets.rs (the zone's settings document, else --notify)
//!        ─► the SOA read for the answer section ─► per target, a task:
//!           exchange.rs deliver (UDP from --notify-source, TSIG if keyed,
//!           retries with backoff; a signed NOTIFY wants a signed reply)
//!           a newer round for the same target supersedes it (aborted)
//!  counters.rs ─► /metrics: mongodns_notify_{sent,acknowledged,failed,coalesced}
//! ```
//!
//! Secondaries then ask the primary for the SOA and transfer the zone:
//! IXFR of the journaled differences when record edits made every change
//! since their serial, else the whole zone (xfr/); NOTIFY
//! is the same either way.

mod counters;
mod exchange;
mod message;
mod schedule;
mod target;
mod targets;

pub use counters::{NotifyCounters, NOTIFY};
pub use exchange::{deliver, Delivery, Sending};
pub use message::{judge_reply, notify_message, Judged, SoaHint, OPCODE_NOTIFY};
pub use target::{check_syntax, parse_target, Target, DEFAULT_PORT};

use crate::tsig::TsigKey;
use crate::zones::ZoneRegistry;
use backend_mongo::Store;
use dns::ZoneInfo;
use std::sync::Arc;
use std::time::Duration;

/// How NOTIFY out behaves.
#[derive(Clone, Debug)]
pub struct NotifyConfig {
    /// Secondaries of every zone without a settings document (`--notify`).
    pub defaults: Vec<Target>,
    /// The server's TSIG keys, for `key=NAME` in settings documents.
    pub keys: Vec<TsigKey>,
    /// Shortest time between two NOTIFY rounds of one zone.
    pub interval: Duration,
    /// Attempts, waits and the source address of each NOTIFY.
    pub retry: Sending,
    /// How often to check whether any zone has a settings document, when
    /// there are no defaults (none: no zone is notified, nothing is read).
    pub settings_check: Duration,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            defaults: Vec::new(),
            keys: Vec::new(),
            interval: Duration::from_millis(1000),
            retry: Sending {
                attempts: 5,
                first_wait: Duration::from_millis(1000),
                source: None,
            },
            settings_check: Duration::from_secs(2),
        }
    }
}

/// Sends NOTIFYs for zones whose serial moved.
pub struct Notifier {
    config: NotifyConfig,
    targets: targets::Targets,
    schedule: schedule::Schedule,
}

impl Notifier {
    /// A notifier reading per-zone settings and SOAs from `store`.
    pub fn new(config: NotifyConfig, store: Store) -> Arc<Notifier> {
        Arc::new(Notifier {
            targets: targets::Targets::new(store, &config),
            schedule: schedule::Schedule::default(),
            config,
        })
    }

    /// Starts listening to `registry`'s serial changes, and (without
    /// defaults) checking for settings documents every `settings_check`.
    pub fn watch(self: &Arc<Self>, registry: &ZoneRegistry) {
        let me = self.clone();
        registry.set_serial_watcher(Box::new(move |info| me.zone_changed(info)));
        if self.config.defaults.is_empty() {
            let me = self.clone();
            tokio::spawn(async move { me.targets.check_loop(me.config.settings_check).await });
        }
    }

    /// `info`'s serial moved: notify its secondaries (now, or folded into
    /// the zone's next round). Does not block.
    pub fn zone_changed(self: &Arc<Self>, info: &ZoneInfo) {
        if !self.targets.may_have_targets() {
            return;
        }
        if self.schedule.offer(info) {
            let me = self.clone();
            let apex = info.apex.clone();
            tokio::spawn(async move { me.run_zone(apex).await });
        }
    }
}
