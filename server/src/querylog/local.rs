//! The answer path's side of the query log: each thread's handle on its
//! own ring, sampling, one clock read per batch, encode and publish.
//!
//! ```text
//!  QueryLog::record_each ─► with_local(log id): this thread's Local
//!     (first time: register ─► a new Ring, handed to the writer)
//!  Local::record_batch: for each query: sampled? ─► clock (once) ─► encode
//!     ─► Ring::write (full: count a drop) ─► at the end one Ring::publish
//!  thread exits ─► Local dropped ─► ring marked abandoned (the writer
//!     forgets it once drained)
//! ```

use super::record::{encode, MAX_RECORD};
use super::ring::Ring;
use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A thread's handle on its ring in one query log.
pub(super) struct Local {
    log: usize,
    ring: Arc<Ring>,
    /// The ring's tail (only this thread moves it).
    tail: u64,
    /// The writer's head as last seen.
    head: u64,
    tick: u32,
    /// Where a record is encoded (reused: nothing to clear per query).
    record: [u8; MAX_RECORD],
}

impl Drop for Local {
    fn drop(&mut self) {
        self.ring.abandoned.store(true, Ordering::Release);
    }
}

thread_local! {
    static LOCALS: RefCell<Vec<Local>> = const { RefCell::new(Vec::new()) };
}

/// Microseconds since 1970 (the answer path's one clock read per batch).
fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Runs `f` on this thread's handle for the query log `log`; the first
/// time, `new_ring` gives the ring (and hands it to the writer). `None`
/// when the thread's handles cannot be reached (the thread is exiting, or
/// a call is already running on this thread).
#[inline]
pub(super) fn with_local<R>(
    log: usize,
    new_ring: impl FnOnce() -> Arc<Ring>,
    f: impl FnOnce(&mut Local) -> R,
) -> Option<R> {
    LOCALS
        .try_with(|locals| {
            let Ok(mut locals) = locals.try_borrow_mut() else {
                return None;
            };
            let i = match locals.iter().position(|l| l.log == log) {
                Some(i) => i,
                None => register(&mut locals, log, new_ring),
            };
            Some(f(&mut locals[i]))
        })
        .ok()
        .flatten()
}

/// First record from this thread for `log`: a ring of its own. Returns its
/// index in `locals`.
#[cold]
fn register(locals: &mut Vec<Local>, log: usize, new_ring: impl FnOnce() -> Arc<Ring>) -> usize {
    // Forget rings of query logs that are gone (only we hold them).
    locals.retain(|l| Arc::strong_count(&l.ring) > 1);
    locals.push(Local {
        log,
        ring: new_ring(),
        tail: 0,
        head: 0,
        tick: 0,
        record: [0; MAX_RECORD],
    });
    locals.len() - 1
}

impl Local {
    /// Appends the sampled ones (one in `every`) of the `n` queries `get`
    /// gives to the ring, and publishes them at once at the end; the clock
    /// is read once, at the first sampled query. Returns how many did not
    /// fit (dropped).
    #[inline]
    pub(super) fn record_batch<'a>(
        &mut self,
        n: usize,
        get: impl Fn(usize) -> (&'a [u8], Option<&'a [u8]>, SocketAddr),
        every: u32,
        tcp: bool,
    ) -> usize {
        let Local {
            ring,
            tail,
            head,
            tick,
            record,
            ..
        } = self;
        let mut now = None;
        let mut dropped = 0;
        let before = *tail;
        for k in 0..n {
            if every > 1 {
                *tick = tick.wrapping_add(1);
                if *tick % every != 0 {
                    continue;
                }
            }
            let unix_us = *now.get_or_insert_with(unix_micros);
            let (query, reply, peer) = get(k);
            let len = encode(record, query, reply, peer, tcp, unix_us);
            if !ring.write(tail, head, &record[..len]) {
                dropped += 1;
            }
        }
        if *tail != before {
            ring.publish(*tail);
        }
        dropped
    }
}
