//! Log lines that would flood the log during an outage: at most one per
//! period for each kind, carrying the count of the lines left out.
//!
//! ```text
//!  RateLimited::allow() ─ a period since the last line ─► Some(suppressed)  (write it)
//!                       └ otherwise ─► None  (counted into the next line)
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One kind of log line, written at most once per period.
pub struct RateLimited {
    period_ms: u64,
    /// When the next line may be written, in ms since `epoch`.
    next_ms: AtomicU64,
    /// Lines left out since the last one written.
    suppressed: AtomicU64,
    epoch: Instant,
}

impl RateLimited {
    /// At most one line per `period`.
    pub fn new(period: Duration) -> Self {
        RateLimited {
            period_ms: period.as_millis() as u64,
            next_ms: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// `Some(n)` when a line may be written now, `n` being how many were
    /// left out since the last one; `None` (and counted) otherwise.
    pub fn allow(&self) -> Option<u64> {
        let now = self.epoch.elapsed().as_millis() as u64;
        let next = self.next_ms.load(Ordering::Relaxed);
        if now >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now + self.period_ms,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return Some(self.suppressed.swap(0, Ordering::Relaxed));
        }
        self.suppressed.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_of_the_others() {
        let log = RateLimited::new(Duration::from_millis(200));
        assert_eq!(log.allow(), Some(0));
        for _ in 0..50 {
            assert_eq!(log.allow(), None);
        }
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(log.allow(), Some(50));
        assert_eq!(log.allow(), None);
    }
}
