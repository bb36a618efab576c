//! Pacing a zone load behind the answer path's database reads.
//!
//! ```text
//!  read_zone (keeper.rs): every STEP nodes read ─► pace()
//!     reads waiting at the record cache's gate? ─► sleep PAUSE, look again,
//!         at most MAX_PAUSE a step (the load always goes on)
//!     none waiting ─► go on at once
//! ```
//!
//! A new version (a replace, `secure-zone`) is read whole while the zone is
//! on today's path, so every name asked meanwhile is a point read. On a
//! database that serves both from the same CPUs (FerretDB scans the whole
//! collection for the load), the scan slows those reads: the seed scenario
//! at 1/100 measured 850 point reads a second at 75 ms each during such a
//! load, against 3,400–5,800 a second on a quiet machine. Pausing the
//! scan while reads wait lets the names being asked reach the record cache
//! first; the load then goes on at full speed, since those names no longer
//! need the database. The pause per step is bounded, so a flood of misses
//! slows a load down but never stops it.

use std::sync::Arc;
use std::time::Duration;
// tokio's clock: the same as std's in the server, and virtual (paused)
// in the tests, which then judge the waits exactly.
use tokio::time::Instant;

/// Nodes read between two looks at the gate (one batch of the load's cursor).
pub(super) const STEP: usize = 4096;

/// How long one pause sleeps before looking again.
const PAUSE: Duration = Duration::from_millis(10);

/// The most a load waits in one step.
const MAX_PAUSE: Duration = Duration::from_millis(250);

/// Whether the answer path's reads are waiting for the database now.
pub type Busy = Arc<dyn Fn() -> bool + Send + Sync>;

/// When a zone load yields to the answer path's reads.
#[derive(Clone)]
pub struct LoadPacing {
    busy: Option<Busy>,
    max_pause: Duration,
}

impl Default for LoadPacing {
    fn default() -> Self {
        LoadPacing::never()
    }
}

impl LoadPacing {
    /// Loads that never pause.
    pub fn never() -> LoadPacing {
        LoadPacing {
            busy: None,
            max_pause: MAX_PAUSE,
        }
    }

    /// Loads that pause while `busy` says reads are waiting.
    pub fn behind(busy: Busy) -> LoadPacing {
        LoadPacing {
            busy: Some(busy),
            ..LoadPacing::never()
        }
    }

    /// The same, waiting at most `max` a step (tests).
    pub fn with_max_pause(mut self, max: Duration) -> LoadPacing {
        self.max_pause = max;
        self
    }

    /// Called after each [`STEP`] nodes: waits while reads are waiting,
    /// at most the step's bound. Returns how long it waited.
    pub async fn pace(&self) -> Duration {
        let Some(busy) = &self.busy else {
            return Duration::ZERO;
        };
        let started = Instant::now();
        let mut waited = Duration::ZERO;
        while busy() && waited < self.max_pause {
            tokio::time::sleep(PAUSE).await;
            waited = started.elapsed();
        }
        waited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn a_load_goes_on_at_once_when_nothing_waits() {
        let pacing = LoadPacing::behind(Arc::new(|| false));
        assert_eq!(pacing.pace().await, Duration::ZERO);
        assert_eq!(LoadPacing::never().pace().await, Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_load_waits_while_reads_wait_and_goes_on_when_they_are_done() {
        let waiting = Arc::new(AtomicBool::new(true));
        let w = waiting.clone();
        let pacing = LoadPacing::behind(Arc::new(move || w.load(Ordering::Relaxed)))
            .with_max_pause(Duration::from_secs(10));
        let clear = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(60)).await;
            waiting.store(false, Ordering::Relaxed);
        });
        let waited = pacing.pace().await;
        clear.await.unwrap();
        // Virtual time: the pauses that saw reads waiting, and not one
        // more (the look after the reads cleared goes on at once).
        assert!(waited >= Duration::from_millis(60), "{waited:?}");
        assert!(waited < Duration::from_millis(60) + 2 * PAUSE, "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_reads_slows_a_load_but_never_stops_it() {
        let pacing =
            LoadPacing::behind(Arc::new(|| true)).with_max_pause(Duration::from_millis(40));
        let waited = pacing.pace().await;
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
        assert!(waited < Duration::from_millis(40) + PAUSE, "{waited:?}");
    }
}
