//! The writer thread: drains every answering thread's ring into the sink,
//! flushes, reopens on request, and naps between rounds.
//!
//! ```text
//!  loop:
//!    take the rings of threads new since the last round
//!    each ring: drain_ring ─► consume a chunk ─► Sink::write_ring (format)
//!               ─► free the words ─► Sink::write_full (write a full buffer)
//!    forget abandoned rings once empty
//!    caught up, or FLUSH_EVERY under load ─► Sink::flush
//!    reopen asked (SIGHUP) ─► Sink::reopen
//!    closing and nothing left ─► flush, end; else nap 1, 10 or 50 ms
//! ```

use super::format::Clock;
use super::ring::Ring;
use super::sink::Sink;
use super::QueryLogStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The writer flushes the file at least this often under steady load.
const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// What the answer path's handle and the writer share.
pub(super) struct Shared {
    /// The query log's counters.
    pub(super) stats: QueryLogStats,
    /// Set to ask the writer to reopen its output (SIGHUP).
    pub(super) reopen: AtomicBool,
    /// Set to make the writer drain what is queued and stop.
    pub(super) closing: AtomicBool,
    /// Rings of threads that logged for the first time, for the writer.
    pub(super) new_rings: Mutex<Vec<Arc<Ring>>>,
}

impl Shared {
    /// Nothing asked yet, no rings.
    pub(super) fn new() -> Shared {
        Shared {
            stats: QueryLogStats::default(),
            reopen: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            new_rings: Mutex::new(Vec::new()),
        }
    }
}

/// Locks `m`, poisoned or not.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer naps instead of being woken: a wake-up per query would cost
/// the answer path a futex call, and on a busy core a context switch. It
/// naps 10 ms (50 ms after a second without lines), 1 ms while some
/// thread's ring came back a quarter full: the default ring holds 8192
/// lines or more, 40 ms at 200,000 queries per second. (Waking every
/// millisecond cost a third of the writer's CPU in syscalls at 20,000
/// queries per second.)
pub(super) fn write_loop(mut sink: Sink, shared: Arc<Shared>) {
    let stats = &shared.stats;
    let mut rings: Vec<Arc<Ring>> = Vec::new();
    let mut clock = Clock::default();
    let mut last_flush = Instant::now();
    let mut idle_rounds = 0u32;
    let mut dirty = false;
    loop {
        let closing = shared.closing.load(Ordering::Acquire);
        rings.append(&mut lock(&shared.new_rings));
        let mut got = 0;
        // A quarter full anywhere means the next nap is short.
        let mut hurry = false;
        for ring in &rings {
            let words = drain_ring(ring, &mut sink, &mut clock, stats);
            got += words;
            hurry |= words * 4 >= ring.capacity();
        }
        // Threads that exited: forget their rings once drained.
        rings.retain(|r| !(r.abandoned.load(Ordering::Acquire) && r.is_empty()));
        if got > 0 {
            dirty = true;
            idle_rounds = 0;
        }
        // Caught up (nothing new since the last round), or long enough
        // under load: what was formatted reaches the file now.
        if dirty && (got == 0 || last_flush.elapsed() >= FLUSH_EVERY) {
            sink.flush(stats);
            last_flush = Instant::now();
            dirty = false;
        }
        if shared.reopen.swap(false, Ordering::AcqRel) {
            sink.reopen(stats);
        }
        if closing {
            if got == 0 {
                break;
            }
            continue;
        }
        idle_rounds = idle_rounds.saturating_add(u32::from(got == 0));
        std::thread::sleep(Duration::from_millis(nap_ms(hurry, idle_rounds)));
    }
    sink.flush(stats);
}

/// A chunk at a time, freed as soon as formatted; a full buffer is
/// written after that, so a slow write never holds ring space. At most a
/// ring's worth per round. Returns the words taken.
fn drain_ring(ring: &Ring, sink: &mut Sink, clock: &mut Clock, stats: &QueryLogStats) -> u64 {
    let mut words = 0;
    while words < ring.capacity() {
        let n = ring.consume(|first, second| sink.write_ring(first, second, clock, stats));
        words += n;
        let wrote = sink.write_full(stats);
        if n == 0 && !wrote {
            break;
        }
    }
    words
}

/// The next nap: short while a ring came back a quarter full, long after
/// a hundred idle rounds (about a second).
fn nap_ms(hurry: bool, idle_rounds: u32) -> u64 {
    if hurry {
        1
    } else if idle_rounds < 100 {
        10
    } else {
        50
    }
}
