//! The query log: one line per query, formatted and written by a thread of
//! its own.
//!
//! ```text
//!  answer path (any runtime thread)                    writer thread (wakes every 1-10 ms)
//!  record() / record_each() (a UDP batch: one clock read, one publish)
//!    sample 1 in N? ─► encode ≈40-byte record ─► this thread's ring ─► decode in place, format
//!    (ring full: drop, count)   (64-bit words, no lock)         │    into a 192 KiB buffer (or
//!                                                               │    send each: syslog socket)
//!                                                               └─► free the words formatted,
//!                                                                   then write() a full buffer
//!  SIGHUP ─► reopen() ─► the writer reopens the file (logrotate) or reconnects
//!  file above query_log_max_mb ─► FILE.1 … FILE.keep shifted, FILE started again
//! ```
//!
//! Nothing on the answer path formats, allocates, waits, takes a lock or
//! runs a locked (read-modify-write) instruction: each thread appends a
//! small binary record (time, client, flags, sizes, the question name's wire
//! bytes) to a ring of its own, a single-producer single-consumer queue of
//! 64-bit words that the thread fills and the writer empties. The thread
//! publishes what it wrote with one release store of its tail, the writer
//! frees what it read with one release store of the head; the two sit on
//! cache lines of their own. The ring is reused in place, so the memory the
//! answer path writes stays in the cache. A full ring means the writer is
//! behind: the line is dropped and counted. The answers of one UDP receive
//! batch (sent together) are recorded together: one clock read, one
//! publish, and their lines share that time. The writer decodes and formats
//! straight from the ring's memory (a record cut by the ring's end is put
//! together in a small copy), into a fixed buffer by index, frees the words
//! it formatted, and only then writes a full buffer (a slow `write` never
//! holds ring space). Lines of different threads may be out of time order by
//! up to a drain (a few milliseconds).
//!
//! Line format (fields separated by one space):
//!
//! ```text
//! 2025-05-01T10:00:00.123456Z 192.0.2.7#53124 udp www.Example.com. IN A NOERROR rd,e,aa 56
//! TIME                        CLIENT#PORT     PROTO QNAME          CLASS TYPE RCODE FLAGS SIZE
//! ```
//!
//! FLAGS is a comma list of `rd` (recursion desired), `e` (EDNS), `do`
//! (DNSSEC OK), `aa` (authoritative answer), `tc` (truncated), or `-`.
//! SIZE is the reply's length; a query that got no reply has RCODE `DROPPED`
//! and SIZE 0. The syslog output sends the same line without TIME (syslog
//! stamps its own).
//!
//! Files, one job each:
//!
//! ```text
//!  mod.rs     the public face: QueryLog, its settings and counters
//!  local.rs   the answer path: each thread's ring handle, sampling, encode
//!  ring.rs    the single-producer single-consumer ring of 64-bit words
//!  record.rs  the record codec (encode on the answer path, decode in the writer)
//!  format.rs  a record as a line: time, client, name, class, type, rcode, flags
//!  sink.rs    the file (buffered, rotated by size) or the syslog socket
//!  writer.rs  the writer thread: drain, flush, reopen, nap
//!  tests.rs   the whole log's tests, and helpers the parts' tests share
//! ```

mod format;
mod local;
mod record;
mod ring;
mod sink;
mod writer;

pub use format::rcode_name;
pub use record::question_name_end;

use crate::config::SyslogFormat;
use crate::handler::Transport;
use ring::Ring;
use sink::Sink;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use writer::{lock, write_loop, Shared};

/// Where lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A file, appended to.
    File(PathBuf),
    /// A syslog daemon's unix datagram socket (normally /dev/log).
    Syslog(PathBuf),
}

impl Destination {
    /// `syslog`, `syslog:/path/to/socket`, or a file path.
    pub fn parse(text: &str) -> Destination {
        if text == "syslog" {
            Destination::Syslog(PathBuf::from("/dev/log"))
        } else if let Some(socket) = text.strip_prefix("syslog:") {
            Destination::Syslog(PathBuf::from(socket))
        } else {
            Destination::File(PathBuf::from(text))
        }
    }
}

/// Settings of the query log.
#[derive(Clone, Debug)]
pub struct QueryLogConfig {
    /// Where lines go.
    pub destination: Destination,
    /// Log one query in this many.
    pub sample: u32,
    /// Lines each answering thread queues for the writer at most (64 bytes
    /// of ring per line).
    pub buffer: usize,
    /// Rotate the file at this size (0: never by size).
    pub max_bytes: u64,
    /// Rotated files kept.
    pub keep: usize,
    /// Syslog line format.
    pub syslog_format: SyslogFormat,
}

/// Counters of the query log.
#[derive(Default)]
pub struct QueryLogStats {
    /// Lines written (to the file or the socket).
    pub written: AtomicU64,
    /// Lines dropped because the writer could not keep up.
    pub dropped: AtomicU64,
    /// Lines lost to write errors (disk full, syslog socket gone).
    pub write_errors: AtomicU64,
    /// Files rotated (by size) or reopened (SIGHUP).
    pub rotations: AtomicU64,
}

static NEXT_LOG_ID: AtomicUsize = AtomicUsize::new(0);

/// The answer path's handle on the query log.
pub struct QueryLog {
    id: usize,
    lines: usize,
    sample: AtomicU32,
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl QueryLog {
    /// Opens the destination (an error here is a start-up error) and starts
    /// the writer thread.
    pub fn open(config: &QueryLogConfig) -> io::Result<QueryLog> {
        let sink = Sink::open(config)?;
        let shared = Arc::new(Shared::new());
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("query-log".into())
            .spawn(move || write_loop(sink, writer_shared))?;
        Ok(QueryLog {
            id: NEXT_LOG_ID.fetch_add(1, Ordering::Relaxed),
            lines: config.buffer.max(1),
            sample: AtomicU32::new(config.sample.max(1)),
            shared,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Offers one query to the log; never waits. `reply` is `None` when
    /// nothing was sent. The line's time is read from the clock here.
    #[inline]
    pub fn record(
        &self,
        query: &[u8],
        reply: Option<&[u8]>,
        peer: SocketAddr,
        transport: Transport,
    ) {
        self.record_each(1, |_| (query, reply, peer), transport);
    }

    /// Offers the `n` queries of one batch (`get(i)` gives the i-th:
    /// query, reply, client) to the log; never waits. The clock is read
    /// once for the whole batch, when the first sampled query is recorded,
    /// and the lines share that time; what they add to this thread's ring
    /// is handed to the writer at once, at the end.
    #[inline]
    pub fn record_each<'a>(
        &self,
        n: usize,
        get: impl Fn(usize) -> (&'a [u8], Option<&'a [u8]>, SocketAddr),
        transport: Transport,
    ) {
        let every = self.sample.load(Ordering::Relaxed);
        let tcp = transport == Transport::Tcp;
        let dropped = local::with_local(
            self.id,
            || self.new_ring(),
            |local| local.record_batch(n, get, every, tcp),
        )
        .unwrap_or(n);
        if dropped > 0 {
            self.shared
                .stats
                .dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
        }
    }

    /// A ring for a thread that logs for the first time, handed to the
    /// writer.
    #[cold]
    fn new_ring(&self) -> Arc<Ring> {
        let ring = Arc::new(Ring::new(self.lines));
        lock(&self.shared.new_rings).push(ring.clone());
        ring
    }

    /// Asks the writer to reopen its file or socket (SIGHUP).
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::Release);
    }

    /// Changes the sampling rate (SIGHUP).
    pub fn set_sample(&self, n: u32) {
        self.sample.store(n.max(1), Ordering::Relaxed);
    }

    /// The current sampling rate.
    pub fn sample(&self) -> u32 {
        self.sample.load(Ordering::Relaxed)
    }

    /// The counters.
    pub fn stats(&self) -> &QueryLogStats {
        &self.shared.stats
    }

    /// Writes what is queued, flushes, and stops the writer; waits at most
    /// `timeout`.
    pub fn close(&self, timeout: Duration) {
        self.shared.closing.store(true, Ordering::Release);
        let Some(handle) = self.writer.lock().ok().and_then(|mut w| w.take()) else {
            return;
        };
        let deadline = Instant::now() + timeout;
        while !handle.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if handle.is_finished() {
            let _ = handle.join();
        } else {
            tracing::warn!("query log writer did not finish in time; lines may be lost");
        }
    }
}

impl Drop for QueryLog {
    fn drop(&mut self) {
        // The writer drains what is queued and stops.
        self.shared.closing.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
