//! The per-zone rate bound: one NOTIFY round per zone per interval, the
//! latest serial always notified.
//!
//! ```text
//!  offer(info): no slot ─► slot {latest: info} ─► true (start the zone's task)
//!               a slot  ─► latest = info (a serial not yet notified is
//!                          replaced: coalesced) ─► false
//!  the zone's task (Notifier::run_zone):
//!     loop: next() ─► Some(latest not yet sent) ─► round ─► sleep interval
//!                  └► None ─► deliveries still retrying? sleep interval
//!                            else finish(): nothing new ─► slot removed, end
//! ```
//!
//! Everything is decided under one lock, so an offer either lands in a
//! slot whose task will see it or creates a slot and a task.

use super::counters::{bump, NOTIFY};
use super::exchange::deliver;
use super::Notifier;
use dns::{Name, RType, ZoneInfo};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::task::JoinHandle;

/// One zone with a NOTIFY due or running.
struct Slot {
    latest: ZoneInfo,
    /// Generation of the last round started.
    sent: Option<i64>,
}

/// The zones with a NOTIFY due or running.
#[derive(Default)]
pub(super) struct Schedule {
    slots: Mutex<HashMap<Name, Slot>>,
}

impl Schedule {
    /// Records `info` as the zone's latest state; true when the zone has
    /// no task yet and one must be started.
    pub(super) fn offer(&self, info: &ZoneInfo) -> bool {
        let mut slots = self.lock();
        match slots.get_mut(&info.apex) {
            Some(slot) if slot.latest.gen < info.gen => {
                if slot.sent != Some(slot.latest.gen) {
                    bump(&NOTIFY.coalesced);
                }
                slot.latest = info.clone();
                false
            }
            Some(_) => false,
            None => {
                let slot = Slot {
                    latest: info.clone(),
                    sent: None,
                };
                slots.insert(info.apex.clone(), slot);
                true
            }
        }
    }

    /// The state to notify now, if the last round did not send it.
    fn next(&self, apex: &Name) -> Option<ZoneInfo> {
        let mut slots = self.lock();
        let slot = slots.get_mut(apex)?;
        if slot.sent == Some(slot.latest.gen) {
            return None;
        }
        slot.sent = Some(slot.latest.gen);
        Some(slot.latest.clone())
    }

    /// Removes the zone's slot unless something new came; true if removed.
    fn finish(&self, apex: &Name) -> bool {
        let mut slots = self.lock();
        match slots.get(apex) {
            Some(slot) if slot.sent != Some(slot.latest.gen) => false,
            _ => {
                slots.remove(apex);
                true
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Name, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Deliveries of one zone still running, by target.
type Running = Vec<(SocketAddr, JoinHandle<()>)>;

impl Notifier {
    /// The zone's task: rounds at most once per interval until nothing is
    /// due and no delivery is retrying.
    pub(super) async fn run_zone(self: Arc<Self>, apex: Name) {
        let mut running: Running = Vec::new();
        loop {
            if let Some(info) = self.schedule.next(&apex) {
                self.round(&info, &mut running).await;
            } else {
                running.retain(|(_, task)| !task.is_finished());
                if running.is_empty() && self.schedule.finish(&apex) {
                    return;
                }
            }
            tokio::time::sleep(self.config.interval).await;
        }
    }

    /// One NOTIFY to each of the zone's secondaries; a delivery still
    /// retrying an older serial to the same secondary is superseded.
    async fn round(&self, info: &ZoneInfo, running: &mut Running) {
        let targets = self.targets.for_zone(info).await;
        if targets.is_empty() {
            return;
        }
        let soa = self.soa_hint(info).await.map(Arc::new);
        for target in targets.iter().cloned() {
            if let Some(at) = running.iter().position(|(a, _)| *a == target.addr) {
                running.swap_remove(at).1.abort();
            }
            let (apex, serial, soa) = (info.apex.clone(), info.serial, soa.clone());
            let retry = self.config.retry;
            let addr = target.addr;
            let task = tokio::spawn(async move {
                let started = Instant::now();
                let outcome = deliver(&target, &apex, soa.as_deref(), retry).await;
                let ms = started.elapsed().as_millis() as u64;
                tracing::info!(zone = %apex, serial, target = %target.addr, ?outcome, ms, "NOTIFY sent");
            });
            running.push((addr, task));
        }
    }

    /// The zone's SOA for the NOTIFY's answer section (none if unreadable).
    async fn soa_hint(&self, info: &ZoneInfo) -> Option<super::SoaHint> {
        let apex = self
            .targets
            .store()
            .get_node(info, &info.apex)
            .await
            .ok()??;
        let soa = apex.rrset(RType::SOA)?;
        Some(super::SoaHint {
            ttl: soa.ttl,
            rdata: soa.rdata.first()?.to_vec(),
        })
    }
}
