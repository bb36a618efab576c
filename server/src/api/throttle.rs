//! Wrong API keys throttled per source: a source prefix that sent
//! MAX_FAILURES wrong keys within WINDOW gets 429 without its key being
//! checked, until WINDOW has passed since its first failure.
//!
//! ```text
//!  request ─► source prefix (IPv4 /24, IPv6 /56) blocked? ── yes ──► 429
//!     ─► key right ──► its failures forgotten ─► the route
//!     ─► key wrong ──► one more failure in its window ─► 401
//! ```
//!
//! At most MAX_SOURCES prefixes are tracked; when full, windows that have
//! passed are dropped first, and a new prefix past that is not tracked
//! (its wrong keys still get 401: throttling is a brake on guessing, the
//! key's length is the defence).

use crate::frontend::slots::source_prefix;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong keys a source prefix may send within [`WINDOW`].
pub const MAX_FAILURES: u32 = 10;

/// How long a source's failures count, from its first.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Source prefixes tracked at most.
const MAX_SOURCES: usize = 4096;

/// One source's failures in its current window.
#[derive(Clone, Copy, Debug)]
struct Failures {
    since: Instant,
    count: u32,
}

/// The wrong keys seen per source prefix.
#[derive(Debug, Default)]
pub struct KeyThrottle {
    sources: Mutex<HashMap<IpAddr, Failures>>,
}

impl KeyThrottle {
    /// True when `ip`'s prefix sent [`MAX_FAILURES`] wrong keys within
    /// the window still running.
    pub fn blocked(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        sources
            .get(&source_prefix(ip))
            .is_some_and(|f| now < f.since + WINDOW && f.count >= MAX_FAILURES)
    }

    /// Counts a wrong key from `ip`.
    pub fn failed(&self, ip: IpAddr) {
        let now = Instant::now();
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        let prefix = source_prefix(ip);
        if sources.len() >= MAX_SOURCES && !sources.contains_key(&prefix) {
            sources.retain(|_, f| now < f.since + WINDOW);
            if sources.len() >= MAX_SOURCES {
                return;
            }
        }
        let f = sources.entry(prefix).or_insert(Failures {
            since: now,
            count: 0,
        });
        if now >= f.since + WINDOW {
            *f = Failures {
                since: now,
                count: 0,
            };
        }
        f.count = f.count.saturating_add(1);
    }

    /// Forgets `ip`'s failures (it sent the right key).
    pub fn succeeded(&self, ip: IpAddr) {
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        sources.remove(&source_prefix(ip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_blocked_after_its_failures_and_others_are_not() {
        let t = KeyThrottle::default();
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let same_prefix: IpAddr = "192.0.2.200".parse().unwrap();
        let other: IpAddr = "198.51.100.1".parse().unwrap();
        for _ in 0..MAX_FAILURES - 1 {
            t.failed(a);
        }
        assert!(!t.blocked(a), "one failure short");
        t.failed(same_prefix);
        assert!(t.blocked(a) && t.blocked(same_prefix), "the prefix counts");
        assert!(!t.blocked(other));
        t.succeeded(a);
        assert!(!t.blocked(a), "the right key forgets the failures");
    }
}
