//! A zone transfer of a resident zone whose version is being loaded waits
//! for the copy, and is then sent from memory.
//!
//! ```text
//!  transfer::run ─► ResidentZones::settle_for_transfer(apex)
//!     ─► Residency::wait_for_load: copy_coming(apex)? ── no ──► at once
//!        yes ─► look again every POLL until the copy holds what is served,
//!               the load ended otherwise (too large, failed), or
//!               transfer_wait passed ─► the transfer goes on (from the
//!               copy if it is current then, else from the database)
//! ```
//!
//! Why: right after a replace or a `secure-zone`, the version served is
//! being loaded. Read from the database instead, a large version costs a
//! sorted read of every node (on FerretDB the whole version is sorted
//! before the first one comes), competing with the load itself; each
//! retry of a secondary would start another. Waiting costs one slot of
//! the transfers at once, and not the transfer's own time limit.

use super::keeper::Residency;
use dns::Name;
use std::sync::atomic::Ordering;
use std::time::Duration;
// tokio's clock: std's in the server, virtual (paused) in the tests.
use tokio::time::Instant;

/// How often a waiting transfer looks at the load again.
const POLL: Duration = Duration::from_millis(50);

impl Residency {
    /// Waits while the copy of `apex` is being loaded or caught up, at most
    /// the configured `transfer_wait`. Returns how long it waited (`None`:
    /// it did not).
    pub async fn wait_for_load(&self, apex: &Name) -> Option<Duration> {
        let limit = self.config().transfer_wait;
        if limit.is_zero() || !self.copy_coming(apex) {
            return None;
        }
        let started = Instant::now();
        self.counters.transfer_waits.fetch_add(1, Ordering::Relaxed);
        tracing::info!(zone = %apex, "zone transfer waits for the resident copy being loaded");
        while self.copy_coming(apex) && started.elapsed() < limit {
            tokio::time::sleep(POLL).await;
        }
        let waited = started.elapsed();
        let ready = !self.copy_coming(apex);
        tracing::info!(zone = %apex, waited_ms = waited.as_millis() as u64, ready,
            "zone transfer done waiting for the resident copy");
        Some(waited)
    }
}

#[cfg(test)]
mod tests {
    use super::super::status::{Residence, ResidentConfig, ZoneChoice};
    use super::*;
    use std::sync::Arc;

    fn residency(wait: Duration) -> Arc<Residency> {
        Residency::new(ResidentConfig {
            budget_bytes: 1 << 20,
            zones: ZoneChoice::All,
            max_records: 0,
            max_lag: Duration::ZERO,
            transfer_wait: wait,
        })
    }

    fn apex() -> Name {
        "wait.test.".parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_transfer_waits_until_the_load_ends() {
        let r = residency(Duration::from_secs(30));
        r.set_slot_for_test(&apex(), true, Residence::Loading);
        let waiter = tokio::spawn({
            let r = r.clone();
            async move { r.wait_for_load(&apex()).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished(), "it went on while the load ran");
        r.set_slot_for_test(&apex(), false, Residence::Resident);
        // Virtual time: done at the first look after the load ended.
        let waited = tokio::time::timeout(POLL * 2, waiter)
            .await
            .expect("still waiting after the load ended")
            .unwrap()
            .expect("it did not wait");
        assert!(waited >= Duration::from_millis(300), "waited {waited:?}");
        assert!(
            waited <= Duration::from_millis(300) + POLL,
            "waited {waited:?}"
        );
        assert_eq!(r.counters.transfer_waits.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_and_can_be_turned_off() {
        let r = residency(Duration::from_millis(200));
        r.set_slot_for_test(&apex(), true, Residence::Loading);
        let started = Instant::now();
        assert!(r.wait_for_load(&apex()).await.is_some());
        // Virtual time: the bound, and at most one look past it.
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        assert!(took <= Duration::from_millis(200) + POLL, "{took:?}");
        let off = residency(Duration::ZERO);
        off.set_slot_for_test(&apex(), true, Residence::Loading);
        assert_eq!(off.wait_for_load(&apex()).await, None);
    }

    #[tokio::test]
    async fn no_wait_without_a_load_or_after_one_failed() {
        let r = residency(Duration::from_secs(30));
        assert_eq!(r.wait_for_load(&apex()).await, None, "a zone not wanted");
        r.set_slot_for_test(&apex(), false, Residence::Failed);
        assert_eq!(r.wait_for_load(&apex()).await, None, "a failed load");
        r.set_slot_for_test(&apex(), false, Residence::TooLarge);
        assert_eq!(r.wait_for_load(&apex()).await, None, "a zone too large");
        assert_eq!(r.counters.transfer_waits.load(Ordering::Relaxed), 0);
    }
}
