//! TCP admission (DNS over TCP and the HTTP listeners): who gets one of
//! the connection slots, and for how long an idle connection may keep it.
//!
//! ```text
//!  accepted ─► source prefix (IPv4 /24, IPv6 /56) over its share? ── yes ──► close
//!     ─► a slot free? ── yes ──► Slot (released on drop)
//!     ─► else evict.rs chooses (under the held map's lock):
//!          Refuse ─► close
//!          Evict(id) ─► that connection is told to close (its Slot's
//!                       `evicted`), counted in the listener's evictions
//!          then wait for a slot, at most the wait given (DNS:
//!          permit_timeout; HTTP: header_timeout), and only if fewer than
//!          max_connections already wait ── none ──► close
//!  DNS over TCP (Slots::new): every slot taken when one more comes: from
//!  a prefix holding two or more while other prefixes hold slots too, it
//!  is closed at once; else it waits while the oldest connection of the
//!  prefix holding the most slots (two at least) is evicted: clients that
//!  keep connections busy with queries they never read cannot shut
//!  newcomers out. Idle timeout: full while at most half the slots are
//!  taken, then shrinking linearly to IDLE_FLOOR as the last slots fill
//!  (as NSD and Knot do); connections already waiting are told (pressure)
//!  and recompute it
//!  HTTP (Slots::new_http): the oldest connection that has not sent its
//!  whole request head (HeadMark), of the prefix holding the most, is
//!  evicted; with none such (every slot mid-request) the newcomer is
//!  closed at once
//! ```

use super::evict::{self, Choice, HeldView};
use crate::guard::{bump, GUARD};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Shortest idle timeout, when every slot is taken.
pub const IDLE_FLOOR: Duration = Duration::from_millis(200);

/// The connection slots of one listener.
pub struct Slots {
    permits: Arc<Semaphore>,
    max: usize,
    max_per_prefix: usize,
    per_prefix: Mutex<HashMap<IpAddr, usize>>,
    waiting: AtomicUsize,
    pressure: Notify,
    /// Held slots in the order they were given.
    held: Mutex<BTreeMap<u64, Held>>,
    next: AtomicU64,
    policy: Policy,
    /// Bumped for each connection told to close for a newcomer.
    evictions: &'static AtomicU64,
}

/// Whom a newcomer at a full listener may evict (evict.rs).
#[derive(Clone, Copy, Debug)]
enum Policy {
    /// DNS over TCP: the oldest of the heaviest prefix.
    Heaviest,
    /// HTTP: the oldest without a whole request head, of the heaviest prefix.
    Silent,
}

/// One held slot: what the choice sees, and how to tell it to close.
struct Held {
    view: HeldView,
    notice: Arc<Notify>,
}

/// A held slot; dropping it frees the slot and the prefix's share.
pub struct Slot {
    slots: Arc<Slots>,
    prefix: IpAddr,
    id: u64,
    evicted: Arc<Notify>,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    /// Told when the connection must give its slot up to a newcomer.
    pub fn evicted(&self) -> &Notify {
        &self.evicted
    }

    /// A handle that marks this slot's request head as received (HTTP).
    pub fn head_mark(&self) -> HeadMark {
        HeadMark {
            slots: self.slots.clone(),
            id: self.id,
        }
    }
}

/// Marks an HTTP connection's request head as received: from then on it
/// is never evicted (a request in flight runs to its end or its timeout).
#[derive(Clone)]
pub struct HeadMark {
    slots: Arc<Slots>,
    id: u64,
}

impl HeadMark {
    /// The whole request head has arrived.
    pub fn received(&self) {
        if let Some(held) = self.slots.held_map().get_mut(&self.id) {
            held.view.head_in = true;
        }
    }
}

/// Why a connection got no slot.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Its source prefix holds its share already.
    Prefix,
    /// No slot freed in time (or too many were waiting already).
    Busy,
}

/// The prefix a source is grouped by: IPv4 /24, IPv6 /56 (IPv4-mapped
/// IPv6 counts as IPv4).
pub fn source_prefix(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::from([a, b, c, 0])
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => source_prefix(IpAddr::V4(v4)),
            None => {
                let mut o = v6.octets();
                o[7..].fill(0);
                IpAddr::from(o)
            }
        },
    }
}

impl Slots {
    /// DNS over TCP: `max` slots, at most `max_per_prefix` (0: no cap)
    /// per source prefix; evictions counted in `tcp_evictions`.
    pub fn new(max: usize, max_per_prefix: usize) -> Arc<Slots> {
        Self::with_policy(max, max_per_prefix, Policy::Heaviest, &GUARD.tcp_evictions)
    }

    /// An HTTP listener's slots: as [`Slots::new`], but only connections
    /// whose request head has not arrived ([`HeadMark`]) are evicted,
    /// counted in `evictions`.
    pub fn new_http(
        max: usize,
        max_per_prefix: usize,
        evictions: &'static AtomicU64,
    ) -> Arc<Slots> {
        Self::with_policy(max, max_per_prefix, Policy::Silent, evictions)
    }

    fn with_policy(
        max: usize,
        max_per_prefix: usize,
        policy: Policy,
        evictions: &'static AtomicU64,
    ) -> Arc<Slots> {
        Arc::new(Slots {
            permits: Arc::new(Semaphore::new(max)),
            max,
            max_per_prefix,
            per_prefix: Mutex::new(HashMap::new()),
            waiting: AtomicUsize::new(0),
            pressure: Notify::new(),
            held: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            policy,
            evictions,
        })
    }

    /// Slots taken now.
    pub fn in_use(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    /// A slot for a connection from `ip`, waiting at most `wait` for one
    /// (`Duration::ZERO`: a free slot now or none).
    pub async fn admit(self: &Arc<Self>, ip: IpAddr, wait: Duration) -> Result<Slot, Refused> {
        let prefix = source_prefix(ip);
        if !self.take_share(prefix) {
            return Err(Refused::Prefix);
        }
        match self.permit(prefix, wait).await {
            Some(permit) => {
                if self.in_use() > self.max / 2 {
                    // The idle timeout just shrank: idle connections recompute it.
                    self.pressure.notify_waiters();
                }
                let id = self.next.fetch_add(1, Ordering::Relaxed);
                let evicted = Arc::new(Notify::new());
                let view = HeldView {
                    prefix,
                    head_in: false,
                };
                let notice = evicted.clone();
                self.held_map().insert(id, Held { view, notice });
                Ok(Slot {
                    slots: self.clone(),
                    prefix,
                    id,
                    evicted,
                    _permit: permit,
                })
            }
            None => {
                self.give_share(prefix);
                Err(Refused::Busy)
            }
        }
    }

    async fn permit(&self, prefix: IpAddr, wait: Duration) -> Option<OwnedSemaphorePermit> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Some(p);
        }
        if !self.evict_for(prefix) {
            return None;
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let got = tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        got.ok().and_then(Result::ok)
    }

    fn held_map(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Held>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every slot is taken and a connection from `newcomer` came: false
    /// when it may not wait (evict.rs refused it); otherwise the connection
    /// chosen, if any, is told to close, and true.
    fn evict_for(&self, newcomer: IpAddr) -> bool {
        let mut held = self.held_map();
        let views = held.iter().map(|(id, h)| (*id, &h.view));
        let choice = match self.policy {
            Policy::Heaviest => evict::heaviest(views, newcomer),
            Policy::Silent => evict::silent(views),
        };
        match choice {
            Choice::Refuse => false,
            Choice::Wait => true,
            Choice::Evict(id) => {
                // Out of the map at once: the next newcomer picks another.
                if let Some(h) = held.remove(&id) {
                    h.notice.notify_one();
                    bump(self.evictions);
                }
                true
            }
        }
    }

    fn take_share(&self, prefix: IpAddr) -> bool {
        if self.max_per_prefix == 0 {
            return true;
        }
        let mut map = self.per_prefix.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(prefix).or_insert(0);
        if *n >= self.max_per_prefix {
            return false;
        }
        *n += 1;
        true
    }

    fn give_share(&self, prefix: IpAddr) {
        if self.max_per_prefix == 0 {
            return;
        }
        let mut map = self.per_prefix.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&prefix) {
            *n -= 1;
            if *n == 0 {
                map.remove(&prefix);
            }
        }
    }

    /// Told whenever a slot is taken past half: the idle timeout shrank.
    pub fn pressure(&self) -> &Notify {
        &self.pressure
    }

    /// The idle timeout now: `full` while at most half the slots are
    /// taken, then down to [`IDLE_FLOOR`] as the rest fill.
    pub fn idle_timeout(&self, full: Duration) -> Duration {
        scaled_idle(full, self.in_use(), self.max)
    }
}

fn scaled_idle(full: Duration, in_use: usize, max: usize) -> Duration {
    let half = max / 2;
    if in_use <= half || max == 0 {
        return full;
    }
    let free = max.saturating_sub(in_use) as u32;
    let span = (max - half) as u32;
    (full * free / span.max(1)).clamp(IDLE_FLOOR.min(full), full)
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.held_map().remove(&self.id);
        self.slots.give_share(self.prefix);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_timeout_shrinks_past_half() {
        let full = Duration::from_secs(10);
        assert_eq!(scaled_idle(full, 0, 20), full);
        assert_eq!(scaled_idle(full, 10, 20), full);
        assert_eq!(scaled_idle(full, 15, 20), Duration::from_secs(5));
        assert_eq!(scaled_idle(full, 19, 20), Duration::from_secs(1));
        assert_eq!(scaled_idle(full, 20, 20), IDLE_FLOOR);
    }

    #[test]
    fn prefixes_group_sources() {
        let p = |s: &str| source_prefix(s.parse().unwrap());
        assert_eq!(p("192.0.2.7"), p("192.0.2.200"));
        assert_ne!(p("192.0.2.7"), p("192.0.3.7"));
        assert_eq!(p("::ffff:192.0.2.1"), p("192.0.2.9"));
        assert_eq!(p("2001:db8:0:1::1"), p("2001:db8:0:1:ff::2"));
        assert_ne!(p("2001:db8:0:100::1"), p("2001:db8:0:200::1"));
    }

    #[tokio::test]
    async fn a_prefix_gets_its_share_and_a_full_listener_times_out() {
        let slots = Slots::new(3, 2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "198.51.100.1".parse().unwrap();
        let wait = Duration::from_millis(50);
        let s1 = slots.admit(a, wait).await.unwrap();
        let _s2 = slots.admit(a, wait).await.unwrap();
        assert_eq!(slots.admit(a, wait).await.err(), Some(Refused::Prefix));
        let _s3 = slots.admit(b, wait).await.unwrap();
        assert_eq!(slots.admit(b, wait).await.err(), Some(Refused::Busy));
        drop(s1);
        let _s4 = slots.admit(b, wait).await.unwrap();
        assert_eq!(slots.in_use(), 3);
    }
}
