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

use crate::config::SyslogFormat;
use crate::pipeline::Transport;
use backend_mongo::civil::civil_from_days;
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Ring words (8 bytes) per line of `query_log_buffer`: a record of an IPv4
/// query for a 20-byte name takes 6.
const WORDS_PER_LINE: usize = 8;
/// The smallest ring holds the longest record (37 words) with room to spare.
const MIN_WORDS: usize = 64;
/// Longest fixed part of a record: time, bits, reply flags and size, port,
/// name length, an IPv6 address, qtype and qclass.
const MAX_HEAD: usize = 16 + 16 + 4;
/// Longest record: the fixed part and a 255-byte name, in whole words.
const MAX_RECORD: usize = (MAX_HEAD + 255).div_ceil(8) * 8;
/// The writer flushes the file at least this often under steady load.
const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// The file output writes once this much is formatted (or at a flush).
const WRITE_AT: usize = 192 * 1024;
/// The writer frees the ring words it formatted at least every this many
/// bytes of lines (about 400), so a writer preempted while formatting
/// holds little ring space.
const FREE_EVERY: usize = 32 * 1024;

// Record bits.
const TCP: u8 = 1;
const V6: u8 = 2;
const REPLIED: u8 = 4;
const EDNS: u8 = 8;
const DNSSEC_OK: u8 = 16;
const RD: u8 = 32;
const QUESTION: u8 = 64;

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

/// A value on a cache line of its own (two lines: the adjacent-line
/// prefetcher pairs them).
#[repr(align(128))]
struct Padded<T>(T);

/// One answering thread's queue of encoded records: 64-bit words written
/// by that thread only (`tail`), read by the writer only (`head`). Both
/// count words since the start; a word's place is the count modulo the
/// ring's size (a power of two). Records are whole words and may wrap.
struct Ring {
    words: Box<[AtomicU64]>,
    mask: u64,
    /// Words the thread has published (written only by the thread).
    tail: Padded<AtomicU64>,
    /// Words the writer has consumed (written only by the writer).
    head: Padded<AtomicU64>,
    /// Set when the thread exits: the writer forgets the ring once drained.
    abandoned: AtomicBool,
}

impl Ring {
    /// A ring with room for about `lines` records.
    fn new(lines: usize) -> Ring {
        let size = lines
            .saturating_mul(WORDS_PER_LINE)
            .max(MIN_WORDS)
            .next_power_of_two();
        Ring {
            words: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size as u64 - 1,
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            abandoned: AtomicBool::new(false),
        }
    }

    fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Appends `record` (whole words) after `*tail`, the thread's own copy
    /// of the tail, without publishing it ([`Ring::publish`] does); `*head`
    /// is its last sight of the writer's head, read again only when the ring
    /// looks full. False when it does not fit. Producer side: only the
    /// owning thread calls this.
    #[inline]
    fn write(&self, tail: &mut u64, head: &mut u64, record: &[u8]) -> bool {
        let n = (record.len() / 8) as u64;
        if *tail + n - *head > self.capacity() {
            *head = self.head.0.load(Ordering::Acquire);
            if *tail + n - *head > self.capacity() {
                return false;
            }
        }
        for (i, word) in record.chunks_exact(8).enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            // Native byte order: the writer reads the words' memory as bytes.
            self.words[((*tail + i as u64) & self.mask) as usize]
                .store(u64::from_ne_bytes(w), Ordering::Relaxed);
        }
        *tail += n;
        true
    }

    /// Hands every word written up to `tail` to the writer (one release
    /// store). Producer side.
    #[inline]
    fn publish(&self, tail: u64) {
        self.tail.0.store(tail, Ordering::Release);
    }

    /// [`Ring::write`] and [`Ring::publish`] for one record.
    #[cfg(test)]
    fn push(&self, tail: &mut u64, head: &mut u64, record: &[u8]) -> bool {
        let ok = self.write(tail, head, record);
        self.publish(*tail);
        ok
    }

    /// Shows every published word to `read` as bytes, in place (one slice,
    /// or two when they wrap past the ring's end), then frees the first
    /// bytes it says it used (whole words; the rest stays for the next
    /// call); returns the number of words freed. Consumer side: only the
    /// writer calls this.
    fn consume(&self, read: impl FnOnce(&[u8], &[u8]) -> usize) -> u64 {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if tail == head {
            return 0;
        }
        let from = (head & self.mask) as usize;
        let to = (tail & self.mask) as usize;
        let (first, second) = if from < to {
            (from..to, 0..0)
        } else {
            (from..self.words.len(), 0..to)
        };
        let bytes = |r: std::ops::Range<usize>| {
            let words = &self.words[r];
            // SAFETY: `AtomicU64` has the size and layout of `u64`. These
            // words lie in [head, tail): the producer published them with
            // the release store of `tail` (acquired above) and writes them
            // again only after the release store of `head` below, which
            // comes after `read` returns; the slices cannot outlive `read`.
            unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) }
        };
        let used = (read(bytes(first), bytes(second)) / 8) as u64;
        debug_assert!(used <= tail - head);
        if used > 0 {
            self.head.0.store(head + used, Ordering::Release);
        }
        used
    }

    fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Acquire)
    }
}

/// Microseconds since 1970 (the answer path's one clock read per batch).
fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A thread's handle on its ring in one query log.
struct Local {
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

static NEXT_LOG_ID: AtomicUsize = AtomicUsize::new(0);

struct Shared {
    stats: QueryLogStats,
    reopen: AtomicBool,
    closing: AtomicBool,
    /// Rings of threads that logged for the first time, for the writer.
    new_rings: Mutex<Vec<Arc<Ring>>>,
}

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
        let shared = Arc::new(Shared {
            stats: QueryLogStats::default(),
            reopen: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            new_rings: Mutex::new(Vec::new()),
        });
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
        let dropped = LOCALS
            .try_with(|locals| {
                let Ok(mut locals) = locals.try_borrow_mut() else {
                    return n;
                };
                let i = match locals.iter().position(|l| l.log == self.id) {
                    Some(i) => i,
                    None => self.register(&mut locals),
                };
                let Local {
                    ring,
                    tail,
                    head,
                    tick,
                    record,
                    ..
                } = &mut locals[i];
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
            })
            .unwrap_or(n);
        if dropped > 0 {
            self.shared
                .stats
                .dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
        }
    }

    /// First record from this thread: a ring of its own, handed to the
    /// writer. Returns its index in `locals`.
    #[cold]
    fn register(&self, locals: &mut Vec<Local>) -> usize {
        // Forget rings of query logs that are gone (only we hold them).
        locals.retain(|l| Arc::strong_count(&l.ring) > 1);
        let ring = Arc::new(Ring::new(self.lines));
        lock(&self.shared.new_rings).push(ring.clone());
        locals.push(Local {
            log: self.id,
            ring,
            tail: 0,
            head: 0,
            tick: 0,
            record: [0; MAX_RECORD],
        });
        locals.len() - 1
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

/// Encodes one record into `h`: the fixed part, then the question name's
/// wire bytes, padded to whole words. Returns its length (a multiple of 8).
/// Every byte up to the name is written (`h` is reused, not cleared); the padding
/// after it is left as it was.
///
/// ```text
/// 0..8 time µs (LE) │ 8 bits │ 9..11 reply flags │ 11..13 reply size (LE) │ 13..15 port (LE)
/// 15 name length │ 16.. address (4 or 16) │ qtype, qclass (wire order; if QUESTION) │ name │ padding
/// ```
#[inline]
fn encode(
    h: &mut [u8; MAX_RECORD],
    query: &[u8],
    reply: Option<&[u8]>,
    peer: SocketAddr,
    tcp: bool,
    unix_us: u64,
) -> usize {
    h[0..8].copy_from_slice(&unix_us.to_le_bytes());
    let mut bits = 0;
    if tcp {
        bits |= TCP;
    }
    if query.len() > 2 && query[2] & 0x01 != 0 {
        bits |= RD;
    }
    h[9..13].fill(0);
    if let Some(r) = reply {
        bits |= REPLIED;
        if r.len() >= 4 {
            h[9] = r[2];
            h[10] = r[3];
        }
        let size = r.len().min(usize::from(u16::MAX)) as u16;
        h[11..13].copy_from_slice(&size.to_le_bytes());
    }
    h[13..15].copy_from_slice(&peer.port().to_le_bytes());
    h[15] = 0;
    let mut at = match peer.ip() {
        IpAddr::V4(a) => {
            h[16..20].copy_from_slice(&a.octets());
            20
        }
        IpAddr::V6(a) => {
            bits |= V6;
            h[16..32].copy_from_slice(&a.octets());
            32
        }
    };
    let end = question_name_end(query).filter(|&e| e + 4 <= query.len() && e - 12 <= 255);
    if let Some(end) = end {
        bits |= QUESTION;
        h[at..at + 4].copy_from_slice(&query[end..end + 4]);
        at += 4;
        let name = &query[12..end];
        h[15] = name.len() as u8;
        h[at..at + name.len()].copy_from_slice(name);
        at += name.len();
        // An OPT record right after the question (the common shape: no
        // answer or authority records in a query).
        let o = end + 4;
        let counts_plain = query[6..10] == [0, 0, 0, 0] && query[10..12] != [0, 0];
        if counts_plain && query.len() >= o + 9 && query[o] == 0 && query[o + 1..o + 3] == [0, 41] {
            bits |= EDNS;
            if query[o + 7] & 0x80 != 0 {
                bits |= DNSSEC_OK;
            }
        }
    }
    h[8] = bits;
    at.div_ceil(8) * 8
}

/// One record, decoded by the writer.
struct Record<'a> {
    unix_us: u64,
    bits: u8,
    reply_flags: [u8; 2],
    size: u16,
    port: u16,
    addr: IpAddr,
    qtype: u16,
    qclass: u16,
    /// The question name's wire bytes, root label included.
    name: &'a [u8],
}

/// Decodes the record at the start of `bytes`; returns it and its length
/// in whole words (its padding included).
fn decode(bytes: &[u8]) -> (Record<'_>, usize) {
    let u16_le = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let mut time = [0u8; 8];
    time.copy_from_slice(&bytes[0..8]);
    let bits = bytes[8];
    let (addr, mut at) = if bits & V6 != 0 {
        let mut o = [0u8; 16];
        o.copy_from_slice(&bytes[16..32]);
        (IpAddr::from(o), 32)
    } else {
        (
            IpAddr::from([bytes[16], bytes[17], bytes[18], bytes[19]]),
            20,
        )
    };
    let (mut qtype, mut qclass, mut name) = (0, 0, &bytes[0..0]);
    if bits & QUESTION != 0 {
        qtype = u16::from_be_bytes([bytes[at], bytes[at + 1]]);
        qclass = u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]);
        at += 4;
        let len = usize::from(bytes[15]);
        name = &bytes[at..at + len];
        at += len;
    }
    let record = Record {
        unix_us: u64::from_le_bytes(time),
        bits,
        reply_flags: [bytes[9], bytes[10]],
        size: u16_le(11),
        port: u16_le(13),
        addr,
        qtype,
        qclass,
        name,
    };
    (record, at.div_ceil(8) * 8)
}

/// The length of the record at the start of `bytes` (its first 16 bytes
/// at least), in whole words.
fn record_len(bytes: &[u8]) -> usize {
    let bits = bytes[8];
    let mut len = if bits & V6 != 0 { 32 } else { 20 };
    if bits & QUESTION != 0 {
        len += 4 + usize::from(bytes[15]);
    }
    len.div_ceil(8) * 8
}

/// How many bytes at the start of `bytes` are whole records.
fn whole_records(bytes: &[u8]) -> usize {
    let mut at = 0;
    while bytes.len() - at >= 16 {
        let len = record_len(&bytes[at..]);
        if at + len > bytes.len() {
            break;
        }
        at += len;
    }
    at
}

/// Where a line is formatted: a buffer with room for the longest line
/// ([`MAX_LINE`]) after `at`, written by index (no capacity check or length
/// update per byte, as a `Vec` push would do).
struct Out<'b> {
    buf: &'b mut [u8],
    at: usize,
}

impl Out<'_> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }

    #[inline]
    fn bytes(&mut self, s: &[u8]) {
        self.buf[self.at..self.at + s.len()].copy_from_slice(s);
        self.at += s.len();
    }

    /// `v` in decimal.
    #[inline]
    fn num(&mut self, mut v: u32) {
        let mut digits = 1;
        let mut t = v;
        while t >= 10 {
            t /= 10;
            digits += 1;
        }
        let end = self.at + digits;
        for d in self.buf[self.at..end].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.at = end;
    }
}

/// The longest line: the time, an IPv6 address, a 255-byte name with
/// every byte escaped (4 bytes each), the other fields at their longest.
const MAX_LINE: usize = 1280;

/// The line without its time: `CLIENT#PORT PROTO QNAME CLASS TYPE RCODE FLAGS SIZE`.
fn format_body(r: &Record, out: &mut Out) {
    push_ip(out, r.addr);
    out.byte(b'#');
    out.num(u32::from(r.port));
    out.bytes(if r.bits & TCP != 0 {
        b" tcp "
    } else {
        b" udp "
    });
    if r.bits & QUESTION != 0 {
        push_name(out, r.name);
        out.byte(b' ');
        match r.qclass {
            1 => out.bytes(b"IN"),
            3 => out.bytes(b"CH"),
            4 => out.bytes(b"HS"),
            255 => out.bytes(b"ANY"),
            c => {
                out.bytes(b"CLASS");
                out.num(u32::from(c));
            }
        }
        out.byte(b' ');
        match r.qtype {
            1 => out.bytes(b"A"),
            28 => out.bytes(b"AAAA"),
            t => out.bytes(backend_mongo::RType(t).mnemonic().as_bytes()),
        }
        out.byte(b' ');
    } else {
        out.bytes(b"- - - ");
    }
    let rd = r.bits & RD != 0;
    if r.bits & REPLIED == 0 {
        out.bytes(if rd { b"DROPPED rd 0" } else { b"DROPPED - 0" });
        return;
    }
    out.bytes(rcode_name(r.reply_flags[1] & 0x0f).as_bytes());
    out.byte(b' ');
    // rd, e, do, aa, tc: five bits, one of 32 texts.
    let mask = usize::from(rd)
        | usize::from(r.bits & EDNS != 0) << 1
        | usize::from(r.bits & DNSSEC_OK != 0) << 2
        | usize::from(r.reply_flags[0] & 0x04 != 0) << 3
        | usize::from(r.reply_flags[0] & 0x02 != 0) << 4;
    out.bytes(FLAG_TEXT[mask].as_bytes());
    out.byte(b' ');
    out.num(u32::from(r.size));
}

/// FLAGS for each combination of rd (bit 0), e, do, aa, tc (bit 4).
const FLAG_TEXT: [&str; 32] = [
    "-",
    "rd",
    "e",
    "rd,e",
    "do",
    "rd,do",
    "e,do",
    "rd,e,do",
    "aa",
    "rd,aa",
    "e,aa",
    "rd,e,aa",
    "do,aa",
    "rd,do,aa",
    "e,do,aa",
    "rd,e,do,aa",
    "tc",
    "rd,tc",
    "e,tc",
    "rd,e,tc",
    "do,tc",
    "rd,do,tc",
    "e,do,tc",
    "rd,e,do,tc",
    "aa,tc",
    "rd,aa,tc",
    "e,aa,tc",
    "rd,e,aa,tc",
    "do,aa,tc",
    "rd,do,aa,tc",
    "e,do,aa,tc",
    "rd,e,do,aa,tc",
];

fn push_ip(out: &mut Out, addr: IpAddr) {
    match addr {
        IpAddr::V4(a) => {
            let [a, b, c, d] = a.octets();
            out.num(u32::from(a));
            out.byte(b'.');
            out.num(u32::from(b));
            out.byte(b'.');
            out.num(u32::from(c));
            out.byte(b'.');
            out.num(u32::from(d));
        }
        IpAddr::V6(a) => {
            let mut text = [0u8; 64];
            let mut w = &mut text[..];
            let _ = write!(w, "{a}");
            let len = 64 - w.len();
            out.bytes(&text[..len]);
        }
    }
}

/// The end of the question name (offset after its root label), if well formed.
pub fn question_name_end(query: &[u8]) -> Option<usize> {
    let mut at = 12;
    loop {
        let len = *query.get(at)? as usize;
        if len == 0 {
            return Some(at + 1);
        }
        if len > 63 {
            return None;
        }
        at += 1 + len;
    }
}

/// A name in presentation form from its wire bytes (no compression),
/// letter case kept, special characters escaped.
/// Bytes a label shows as they are: letters, digits, `-` and `_` (one
/// table load per byte instead of four comparisons).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
        b += 1;
    }
    t
};

fn push_name(out: &mut Out, name: &[u8]) {
    if name.len() <= 1 {
        out.byte(b'.');
        return;
    }
    let mut at = 0;
    while at + 1 < name.len() {
        let len = usize::from(name[at]);
        let label = &name[at + 1..(at + 1 + len).min(name.len())];
        if label.iter().all(|&b| PLAIN[usize::from(b)]) {
            out.bytes(label);
        } else {
            for &b in label {
                match b {
                    b'.' | b'\\' | b'"' | b';' | b'(' | b')' | b'@' | b'$' => {
                        out.byte(b'\\');
                        out.byte(b);
                    }
                    0x21..=0x7e => out.byte(b),
                    _ => {
                        out.byte(b'\\');
                        out.bytes(&[b'0' + b / 100, b'0' + b / 10 % 10, b'0' + b % 10]);
                    }
                }
            }
        }
        out.byte(b'.');
        at += 1 + len;
    }
}

/// Rcode mnemonic.
pub fn rcode_name(rcode: u8) -> &'static str {
    match rcode {
        0 => "NOERROR",
        1 => "FORMERR",
        2 => "SERVFAIL",
        3 => "NXDOMAIN",
        4 => "NOTIMP",
        5 => "REFUSED",
        6 => "YXDOMAIN",
        7 => "YXRRSET",
        8 => "NXRRSET",
        9 => "NOTAUTH",
        10 => "NOTZONE",
        _ => "RCODE_OTHER",
    }
}

/// `write!` into `out` through a small stack buffer (`Out` is a plain slice).
fn push_fmt(out: &mut Out, args: std::fmt::Arguments) {
    let mut text = [0u8; 48];
    let mut w = &mut text[..];
    let _ = w.write_fmt(args);
    let len = 48 - w.len();
    out.bytes(&text[..len]);
}

fn push_rfc3339(out: &mut Out, unix_us: u64) {
    let secs = (unix_us / 1_000_000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    push_fmt(
        out,
        format_args!(
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
            s / 3600,
            s / 60 % 60,
            s % 60,
            unix_us % 1_000_000
        ),
    );
}

fn push_rfc3164_time(out: &mut Out, unix_us: u64) {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = (unix_us / 1_000_000) as i64;
    let (_, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    push_fmt(
        out,
        format_args!(
            "{} {d:>2} {:02}:{:02}:{:02}",
            MONTHS[(mo - 1) as usize],
            s / 3600,
            s / 60 % 60,
            s % 60
        ),
    );
}

/// The RFC 3339 time of a line: the last time's text kept whole (the
/// lines of one UDP batch share their time), the part up to the second
/// cached (lines come in thousands per second).
#[derive(Default)]
struct Clock {
    second: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS.`
    prefix: [u8; 20],
    last: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ` of `last`.
    text: [u8; 27],
}

impl Clock {
    fn push(&mut self, out: &mut Out, unix_us: u64) {
        if self.last != Some(unix_us) {
            let second = unix_us / 1_000_000;
            if self.second != Some(second) {
                let mut text = [0u8; 32];
                push_rfc3339(
                    &mut Out {
                        buf: &mut text,
                        at: 0,
                    },
                    second * 1_000_000,
                );
                self.prefix.copy_from_slice(&text[..20]);
                self.second = Some(second);
            }
            self.text[..20].copy_from_slice(&self.prefix);
            let mut micros = unix_us % 1_000_000;
            for d in self.text[20..26].iter_mut().rev() {
                *d = b'0' + (micros % 10) as u8;
                micros /= 10;
            }
            self.text[26] = b'Z';
            self.last = Some(unix_us);
        }
        out.bytes(&self.text);
    }
}

enum Sink {
    File {
        path: PathBuf,
        file: File,
        /// Formatted lines not yet written: the first `filled` bytes of
        /// `pending` (room for [`WRITE_AT`] and one more line), `pending_lines`
        /// lines.
        pending: Box<[u8]>,
        filled: usize,
        pending_lines: u64,
        /// The file's size, `pending` included.
        size: u64,
        max_bytes: u64,
        keep: usize,
    },
    Syslog {
        path: PathBuf,
        socket: Option<UnixDatagram>,
        format: SyslogFormat,
        /// RFC 3164: ` mongodns[PID]: `; RFC 5424: ` HOST mongodns PID query - `.
        tag: Vec<u8>,
        /// One message (room for the tag and the longest line).
        line: Box<[u8]>,
    },
}

/// Opens the log for appending; a new file is readable by its owner only
/// (queries say who asked what).
fn open_append(path: &Path) -> io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

fn connect_syslog(path: &Path) -> io::Result<UnixDatagram> {
    let socket = UnixDatagram::unbound()?;
    socket.connect(path)?;
    Ok(socket)
}

/// Writes `bytes` (`lines` lines) to `file`, counting them as written or lost.
fn write_counted(file: &mut File, bytes: &[u8], lines: u64, stats: &QueryLogStats) {
    if lines == 0 && bytes.is_empty() {
        return;
    }
    let counter = if file.write_all(bytes).is_ok() {
        &stats.written
    } else {
        &stats.write_errors
    };
    counter.fetch_add(lines, Ordering::Relaxed);
}

impl Sink {
    fn open(config: &QueryLogConfig) -> io::Result<Sink> {
        match &config.destination {
            Destination::File(path) => {
                let (file, size) = open_append(path).map_err(|e| {
                    io::Error::new(e.kind(), format!("query log {}: {e}", path.display()))
                })?;
                Ok(Sink::File {
                    path: path.clone(),
                    file,
                    pending: vec![0; WRITE_AT + MAX_LINE].into_boxed_slice(),
                    filled: 0,
                    pending_lines: 0,
                    size,
                    max_bytes: config.max_bytes,
                    keep: config.keep,
                })
            }
            Destination::Syslog(path) => {
                let socket = connect_syslog(path).map_err(|e| {
                    io::Error::new(e.kind(), format!("syslog socket {}: {e}", path.display()))
                })?;
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "-".into());
                let pid = std::process::id();
                let tag = match config.syslog_format {
                    SyslogFormat::Rfc3164 => format!(" mongodns[{pid}]: "),
                    SyslogFormat::Rfc5424 => format!(" {host} mongodns {pid} query - "),
                };
                Ok(Sink::Syslog {
                    path: path.clone(),
                    socket: Some(socket),
                    format: config.syslog_format,
                    line: vec![0; 64 + tag.len() + MAX_LINE].into_boxed_slice(),
                    tag: tag.into_bytes(),
                })
            }
        }
    }

    /// Formats the records of `bytes` (whole records, as read from a ring)
    /// and writes them: the file output into its buffer, stopping once
    /// `stop` bytes are in it ([`Sink::write_full`] writes it); the
    /// syslog output one message per line, every record. Returns the bytes
    /// of `bytes` done.
    fn write_records(
        &mut self,
        mut bytes: &[u8],
        stop: usize,
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        let total = bytes.len();
        match self {
            Sink::File {
                path,
                file,
                pending,
                filled,
                pending_lines,
                size,
                max_bytes,
                keep,
            } => {
                while !bytes.is_empty() && *filled < stop {
                    let (record, len) = decode(bytes);
                    bytes = &bytes[len..];
                    // Straight into the write buffer: no per-line copy.
                    let start = *filled;
                    let mut out = Out {
                        buf: pending,
                        at: start,
                    };
                    clock.push(&mut out, record.unix_us);
                    out.byte(b' ');
                    format_body(&record, &mut out);
                    out.byte(b'\n');
                    let end = out.at;
                    *filled = end;
                    let line_len = (end - start) as u64;
                    if *max_bytes > 0 && *size > 0 && *size + line_len > *max_bytes {
                        // What came before this line goes to the old file.
                        write_counted(file, &pending[..start], *pending_lines, stats);
                        pending.copy_within(start..end, 0);
                        *filled = end - start;
                        *pending_lines = 0;
                        match rotate(path, file, *keep) {
                            Ok(()) => {
                                *size = 0;
                                stats.rotations.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => tracing::warn!(error = %e, "query log rotation failed"),
                        }
                    }
                    *size += line_len;
                    *pending_lines += 1;
                }
            }
            Sink::Syslog {
                socket,
                format,
                tag,
                line,
                ..
            } => {
                let (mut written, mut errors) = (0u64, 0u64);
                while !bytes.is_empty() {
                    let (record, len) = decode(bytes);
                    bytes = &bytes[len..];
                    let mut out = Out { buf: line, at: 0 };
                    // facility daemon (3), severity info (6)
                    match format {
                        SyslogFormat::Rfc3164 => {
                            out.bytes(b"<30>");
                            push_rfc3164_time(&mut out, record.unix_us);
                        }
                        SyslogFormat::Rfc5424 => {
                            out.bytes(b"<30>1 ");
                            clock.push(&mut out, record.unix_us);
                        }
                    }
                    out.bytes(tag);
                    format_body(&record, &mut out);
                    let end = out.at;
                    if socket
                        .as_ref()
                        .is_some_and(|s| s.send(&line[..end]).is_ok())
                    {
                        written += 1;
                    } else {
                        errors += 1;
                    }
                }
                if written > 0 {
                    stats.written.fetch_add(written, Ordering::Relaxed);
                }
                if errors > 0 {
                    stats.write_errors.fetch_add(errors, Ordering::Relaxed);
                }
            }
        }
        total - bytes.len()
    }

    /// Writes the file output's buffer if [`WRITE_AT`] bytes are ready;
    /// true if it did.
    fn write_full(&mut self, stats: &QueryLogStats) -> bool {
        match self {
            Sink::File {
                file,
                pending,
                filled,
                pending_lines,
                ..
            } if *filled >= WRITE_AT => {
                write_counted(file, &pending[..*filled], *pending_lines, stats);
                *filled = 0;
                *pending_lines = 0;
                true
            }
            _ => false,
        }
    }

    /// Formats the records a ring showed: `first`, then `second` (its
    /// words after the wrap), for the file output [`FREE_EVERY`] bytes of
    /// lines at most and never past a full buffer; returns
    /// the bytes done. A record cut in two by the wrap is put together in a
    /// small copy.
    fn write_ring(
        &mut self,
        first: &[u8],
        second: &[u8],
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        let stop = match self {
            Sink::File { filled, .. } => (*filled + FREE_EVERY).min(WRITE_AT),
            Sink::Syslog { .. } => usize::MAX,
        };
        let whole = whole_records(first);
        let done = self.write_records(&first[..whole], stop, clock, stats);
        if done < whole {
            return done;
        }
        let rest = &first[whole..];
        let mut second = second;
        let mut done = whole;
        if !rest.is_empty() {
            let mut joined = [0u8; MAX_RECORD];
            let take = (MAX_RECORD - rest.len()).min(second.len());
            joined[..rest.len()].copy_from_slice(rest);
            joined[rest.len()..rest.len() + take].copy_from_slice(&second[..take]);
            let len = record_len(&joined);
            if self.write_records(&joined[..len], stop, clock, stats) < len {
                return done;
            }
            done += len;
            second = &second[len - rest.len()..];
        }
        done + self.write_records(second, stop, clock, stats)
    }

    /// Writes what is formatted and not yet written.
    fn flush(&mut self, stats: &QueryLogStats) {
        if let Sink::File {
            file,
            pending,
            filled,
            pending_lines,
            ..
        } = self
        {
            write_counted(file, &pending[..*filled], *pending_lines, stats);
            *filled = 0;
            *pending_lines = 0;
        }
    }

    fn reopen(&mut self, stats: &QueryLogStats) {
        self.flush(stats);
        match self {
            Sink::File {
                path, file, size, ..
            } => match open_append(path) {
                Ok((new_file, new_size)) => {
                    *file = new_file;
                    *size = new_size;
                    stats.rotations.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(path = %path.display(), "query log reopened");
                }
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "cannot reopen the query log; keeping the old file")
                }
            },
            Sink::Syslog { path, socket, .. } => match connect_syslog(path) {
                Ok(s) => {
                    *socket = Some(s);
                    tracing::info!(path = %path.display(), "syslog socket reconnected");
                }
                Err(e) => {
                    *socket = None;
                    tracing::error!(path = %path.display(), error = %e, "cannot reconnect to syslog");
                }
            },
        }
    }
}

/// FILE.(keep-1) ─► FILE.keep … FILE ─► FILE.1, then a new FILE.
fn rotate(path: &Path, file: &mut File, keep: usize) -> io::Result<()> {
    let numbered = |n: usize| {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    };
    if keep == 0 {
        std::fs::remove_file(path)?;
    } else {
        for n in (1..keep).rev() {
            let from = numbered(n);
            if from.exists() {
                std::fs::rename(&from, numbered(n + 1))?;
            }
        }
        std::fs::rename(path, numbered(1))?;
    }
    *file = open_append(path)?.0;
    Ok(())
}

/// The writer naps instead of being woken: a wake-up per query would cost
/// the answer path a futex call, and on a busy core a context switch. It
/// naps 10 ms (50 ms after a second without lines), 1 ms while some
/// thread's ring came back a quarter full: the default ring holds 8192
/// lines or more, 40 ms at 200,000 queries per second. (Waking every
/// millisecond cost a third of the writer's CPU in syscalls at 20,000
/// queries per second.)
fn write_loop(mut sink: Sink, shared: Arc<Shared>) {
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
            let mut words = 0;
            // A chunk at a time, freed as soon as formatted; a full buffer
            // is written after that, so a slow write never holds ring
            // space. At most a ring's worth per round.
            while words < ring.capacity() {
                let n =
                    ring.consume(|first, second| sink.write_ring(first, second, &mut clock, stats));
                words += n;
                let wrote = sink.write_full(stats);
                if n == 0 && !wrote {
                    break;
                }
            }
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
        let nap = if hurry {
            1
        } else if idle_rounds < 100 {
            10
        } else {
            50
        };
        std::thread::sleep(Duration::from_millis(nap));
    }
    sink.flush(stats);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_log_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mdqlmode{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("queries.log");
        let _ = std::fs::remove_file(&path);
        open_append(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "query log mode {mode:o}");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// What a formatting function writes.
    fn text(f: impl FnOnce(&mut Out)) -> String {
        let mut buf = [0u8; MAX_LINE];
        let mut out = Out {
            buf: &mut buf,
            at: 0,
        };
        f(&mut out);
        let len = out.at;
        String::from_utf8(buf[..len].to_vec()).unwrap()
    }

    /// Every published word of `ring`, as the writer sees it, joined.
    fn drain(ring: &Ring, out: &mut Vec<u8>) -> u64 {
        ring.consume(|first, second| {
            out.extend_from_slice(first);
            out.extend_from_slice(second);
            first.len() + second.len()
        })
    }

    #[test]
    fn dates() {
        assert_eq!(text(|o| push_rfc3339(o, 0)), "1970-01-01T00:00:00.000000Z");
        // 2024-02-29T12:34:56.789Z (a leap day)
        assert_eq!(
            text(|o| push_rfc3339(o, 1_709_210_096_789_000)),
            "2024-02-29T12:34:56.789000Z"
        );
        assert_eq!(
            text(|o| push_rfc3164_time(o, 1_709_210_096_789_000)),
            "Feb 29 12:34:56"
        );
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        // The cached clock gives the same text, across a second boundary.
        let mut clock = Clock::default();
        for us in [
            1_709_210_096_789_000,
            1_709_210_096_789_000,
            1_709_210_096_999_999,
            1_709_210_097_000_042,
            1_709_210_097_000_042,
            1_709_210_097_000_043,
        ] {
            assert_eq!(text(|o| clock.push(o, us)), text(|o| push_rfc3339(o, us)));
        }
    }

    fn query(name: &[u8], qtype: u16, edns_do: Option<bool>) -> Vec<u8> {
        let mut q = vec![
            0x12,
            0x34,
            0x01,
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            u8::from(edns_do.is_some()),
        ];
        q.extend_from_slice(name);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&[0, 1]);
        if let Some(d) = edns_do {
            q.extend_from_slice(&[0, 0, 41, 4, 208, 0, 0, if d { 0x80 } else { 0 }, 0, 0, 0]);
        }
        q
    }

    /// The line body for one query, through encode, a ring and decode.
    fn body(q: &[u8], reply: Option<&[u8]>, peer: &str, tcp: bool) -> String {
        // A used buffer: encode must not rely on zeroed bytes.
        let mut rec = [0xAA; MAX_RECORD];
        let len = encode(&mut rec, q, reply, peer.parse().unwrap(), tcp, 7);
        assert_eq!(len % 8, 0);
        let ring = Ring::new(1);
        let (mut tail, mut head) = (0, 0);
        assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        let mut bytes = Vec::new();
        assert_eq!(drain(&ring, &mut bytes), len as u64 / 8);
        let (record, used) = decode(&bytes);
        assert_eq!(used, bytes.len(), "the record's length");
        assert_eq!(record.unix_us, 7);
        text(|o| format_body(&record, o))
    }

    fn reply(flags: u8, rcode: u8, len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[2] = flags;
        r[3] = rcode;
        r
    }

    #[test]
    fn lines() {
        let peer = "192.0.2.7:53124";
        let q = query(b"\x03www\x07Example\x03com\x00", 1, Some(true));
        assert_eq!(
            body(&q, Some(&reply(0x85, 0, 56)), peer, false),
            "192.0.2.7#53124 udp www.Example.com. IN A NOERROR rd,e,do,aa 56"
        );
        let q = query(b"\x02a.\x00", 28, None);
        assert_eq!(
            body(&q, Some(&reply(0x84, 0x03, 90)), peer, false),
            "192.0.2.7#53124 udp a\\.. IN AAAA NXDOMAIN rd,aa 90"
        );
        assert_eq!(
            body(&[1, 2, 0], None, peer, false),
            "192.0.2.7#53124 udp - - - DROPPED - 0"
        );
        // IPv6, TCP, the root, an unknown class and type, odd bytes, no flags.
        let mut q = query(b"\x00", 65280, None);
        q[2] = 0;
        let n = q.len();
        q[n - 1] = 9;
        assert_eq!(
            body(&q, Some(&reply(0x80, 0x05, 12)), "[2001:db8::1]:53", true),
            "2001:db8::1#53 tcp . CLASS9 TYPE65280 REFUSED - 12"
        );
        let q = query(b"\x03a b\x02\x01\xff\x00", 16, Some(false));
        assert_eq!(
            body(&q, Some(&reply(0x83, 0x02, 30)), peer, false),
            "192.0.2.7#53124 udp a\\032b.\\001\\255. IN TXT SERVFAIL rd,e,tc 30"
        );
        // A query without a reply keeps its name.
        let q = query(b"\x01x\x00", 1, None);
        assert_eq!(
            body(&q, None, peer, false),
            "192.0.2.7#53124 udp x. IN A DROPPED rd 0"
        );
    }

    #[test]
    fn a_ring_holds_what_fits_wraps_around_and_never_grows() {
        let q = query(b"\x03www\x07example\x03com\x00", 1, None);
        let mut rec = [0u8; MAX_RECORD];
        let len = encode(&mut rec, &q, None, "192.0.2.1:1".parse().unwrap(), false, 1);
        // 20 + 4 + 17 bytes: 6 words.
        assert_eq!(len, 48);
        let ring = Ring::new(8);
        assert_eq!(ring.capacity(), 64);
        let (mut tail, mut head) = (0, 0);
        for _ in 0..10 {
            assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        }
        assert!(
            !ring.push(&mut tail, &mut head, &rec[..len]),
            "the 11th line"
        );
        assert_eq!(tail, 60);
        // The writer takes all ten; the thread sees the room only when it
        // looks full, and the next records wrap past the end.
        let mut bytes = Vec::new();
        assert_eq!(drain(&ring, &mut bytes), 60);
        assert_eq!(
            head, 0,
            "the thread's view of the head is stale until needed"
        );
        for i in 0..10u64 {
            let mut r = rec;
            r[0..8].copy_from_slice(&(100 + i).to_le_bytes());
            assert!(ring.push(&mut tail, &mut head, &r[..len]), "line {i}");
        }
        assert_eq!(head, 60);
        assert!(!ring.is_empty());
        bytes.clear();
        assert_eq!(drain(&ring, &mut bytes), 60);
        assert!(ring.is_empty());
        let mut at = 0;
        for i in 0..10u64 {
            let (record, used) = decode(&bytes[at..]);
            assert_eq!(record.unix_us, 100 + i);
            assert_eq!(record.name, b"\x03www\x07example\x03com\x00");
            at += used;
        }
        assert_eq!(at, bytes.len());
        assert_eq!(ring.words.len(), 64);
        // The longest name (255 bytes on the wire) fits the smallest ring.
        let mut long = Vec::new();
        for len in [63u8, 63, 63, 61] {
            long.push(len);
            long.extend(std::iter::repeat_n(b'a', usize::from(len)));
        }
        long.push(0);
        let q = query(&long, 1, None);
        let peer = "[2001:db8::1]:53".parse().unwrap();
        let len = encode(&mut rec, &q, None, peer, false, 1);
        assert_eq!(len, MAX_RECORD);
        let ring = Ring::new(1);
        let (mut tail, mut head) = (0, 0);
        assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        assert!(!ring.push(&mut tail, &mut head, &rec[..len]));
        bytes.clear();
        drain(&ring, &mut bytes);
        let (record, _) = decode(&bytes);
        assert_eq!(record.name, &long[..]);
        assert_eq!(record.addr, "2001:db8::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_ring_passes_every_record_between_two_threads() {
        // One producer, one consumer, far more records than the ring holds.
        let ring = Arc::new(Ring::new(4));
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                let (mut tail, mut head) = (0, 0);
                let mut i = 0u64;
                while i < 100_000 {
                    let mut r = [0u8; 24];
                    r[0..8].copy_from_slice(&i.to_le_bytes());
                    r[8..16].copy_from_slice(&(!i).to_le_bytes());
                    r[16..24].copy_from_slice(&i.wrapping_mul(7).to_le_bytes());
                    if ring.push(&mut tail, &mut head, &r) {
                        i += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut next = 0u64;
        let mut bytes = Vec::new();
        while next < 100_000 {
            bytes.clear();
            drain(&ring, &mut bytes);
            assert_eq!(bytes.len() % 24, 0);
            for r in bytes.chunks_exact(24) {
                let word = |k: usize| u64::from_le_bytes(r[k * 8..k * 8 + 8].try_into().unwrap());
                assert_eq!(
                    (word(0), word(1), word(2)),
                    (next, !next, next.wrapping_mul(7))
                );
                next += 1;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        assert!(ring.is_empty());
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mdql_{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn config(destination: Destination, buffer: usize) -> QueryLogConfig {
        QueryLogConfig {
            destination,
            sample: 1,
            buffer,
            max_bytes: 0,
            keep: 5,
            syslog_format: SyslogFormat::Rfc3164,
        }
    }

    fn numbered_query(i: usize) -> Vec<u8> {
        let label = format!("n{i}");
        let mut name = vec![label.len() as u8];
        name.extend_from_slice(label.as_bytes());
        name.extend_from_slice(b"\x04test\x00");
        query(&name, 1, None)
    }

    #[test]
    fn every_line_from_every_thread_reaches_the_file_in_order() {
        let dir = scratch("threads");
        let path = dir.join("q.log");
        let log = Arc::new(QueryLog::open(&config(Destination::File(path.clone()), 8192)).unwrap());
        let ok = reply(0x84, 0, 40);
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let log = log.clone();
                let ok = ok.clone();
                std::thread::spawn(move || {
                    let peer: SocketAddr = format!("10.0.0.{t}:53").parse().unwrap();
                    for i in 0..2000 {
                        log.record(&numbered_query(i), Some(&ok), peer, Transport::Udp);
                        if i % 500 == 0 {
                            std::thread::sleep(Duration::from_millis(3));
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        log.close(Duration::from_secs(10));
        assert_eq!(log.stats().dropped.load(Ordering::Relaxed), 0);
        assert_eq!(log.stats().written.load(Ordering::Relaxed), 6000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 6000);
        for t in 0..3 {
            let client = format!(" 10.0.0.{t}#53 udp ");
            let seen: Vec<usize> = text
                .lines()
                .filter(|l| l.contains(&client))
                .map(|l| {
                    let name = l.split(' ').nth(3).unwrap();
                    name[1..name.find('.').unwrap()].parse().unwrap()
                })
                .collect();
            assert_eq!(seen, (0..2000).collect::<Vec<_>>(), "thread {t}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_batch_reads_the_clock_once_and_samples_across_batches() {
        let dir = scratch("batch");
        let path = dir.join("q.log");
        let mut c = config(Destination::File(path.clone()), 64);
        c.sample = 3;
        let log = QueryLog::open(&c).unwrap();
        let queries: Vec<Vec<u8>> = (0..20).map(numbered_query).collect();
        let ok = reply(0x84, 0, 40);
        let peer: SocketAddr = "192.0.2.9:99".parse().unwrap();
        // 20 queries in batches of 7, 7, 6: the 3rd, 6th, … 18th are logged.
        for batch in queries.chunks(7) {
            log.record_each(
                batch.len(),
                |i| (&batch[i], Some(&ok), peer),
                Transport::Udp,
            );
        }
        log.set_sample(1);
        let (a, b) = (numbered_query(100), numbered_query(101));
        let pair = [&a, &b];
        std::thread::sleep(Duration::from_millis(3));
        log.record_each(2, |i| (pair[i], Some(&ok), peer), Transport::Udp);
        log.close(Duration::from_secs(10));
        let text = std::fs::read_to_string(&path).unwrap();
        let names: Vec<&str> = text.lines().map(|l| l.split(' ').nth(3).unwrap()).collect();
        assert_eq!(
            names,
            [
                "n2.test.",
                "n5.test.",
                "n8.test.",
                "n11.test.",
                "n14.test.",
                "n17.test.",
                "n100.test.",
                "n101.test."
            ]
        );
        // One batch, one time; a later batch, a later time.
        let times: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(times[6], times[7], "{text}");
        assert!(times[5] < times[6], "{text}");
        assert_eq!(log.stats().written.load(Ordering::Relaxed), 8);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn records_cut_by_the_end_of_the_ring_are_written_whole() {
        let dir = scratch("wrap");
        let path = dir.join("q.log");
        let c = config(Destination::File(path.clone()), 8);
        let mut sink = Sink::open(&c).unwrap();
        let stats = QueryLogStats::default();
        let mut clock = Clock::default();
        // 64 words; records of 5 to 7 words (IPv4 and IPv6 clients, names
        // of 9 to 13 bytes): the end of the ring cuts records at every offset.
        let ring = Ring::new(8);
        let (mut tail, mut head) = (0, 0);
        let mut rec = [0u8; MAX_RECORD];
        let mut expected = Vec::new();
        let mut i = 0;
        for round in 0..40 {
            for _ in 0..(round % 7 + 1) {
                let q = numbered_query(i * 997 % 100_000);
                let peer = if i % 3 == 0 {
                    "[2001:db8::5]:7"
                } else {
                    "192.0.2.5:7"
                };
                let len = encode(&mut rec, &q, None, peer.parse().unwrap(), false, 1);
                if !ring.push(&mut tail, &mut head, &rec[..len]) {
                    break;
                }
                expected.push(format!("n{}.test.", i * 997 % 100_000));
                i += 1;
            }
            ring.consume(|first, second| sink.write_ring(first, second, &mut clock, &stats));
        }
        sink.flush(&stats);
        assert!(tail > 4 * ring.capacity(), "wrapped several times");
        let text = std::fs::read_to_string(&path).unwrap();
        let names: Vec<&str> = text.lines().map(|l| l.split(' ').nth(3).unwrap()).collect();
        assert_eq!(names, expected);
        assert_eq!(stats.written.load(Ordering::Relaxed), expected.len() as u64);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_writer_frees_ring_space_a_chunk_at_a_time_and_writes_full_buffers() {
        let dir = scratch("full");
        let path = dir.join("q.log");
        let mut sink = Sink::open(&config(Destination::File(path.clone()), 8)).unwrap();
        let stats = QueryLogStats::default();
        let mut clock = Clock::default();
        // About 5,000 lines of ~70 bytes: more than one buffer (WRITE_AT).
        let ring = Ring::new(8192);
        let (mut tail, mut head) = (0, 0);
        let mut rec = [0u8; MAX_RECORD];
        let lines = 5000;
        for i in 0..lines {
            let len = encode(
                &mut rec,
                &numbered_query(i),
                None,
                "192.0.2.5:7".parse().unwrap(),
                false,
                1,
            );
            assert!(ring.write(&mut tail, &mut head, &rec[..len]));
        }
        ring.publish(tail);
        let first = ring.consume(|a, b| sink.write_ring(a, b, &mut clock, &stats));
        assert!(
            first > 0 && first < tail,
            "stopped after a chunk: {first} of {tail}"
        );
        assert!(
            !sink.write_full(&stats),
            "one chunk does not fill the buffer"
        );
        let mut writes = 0;
        while !ring.is_empty() {
            let before = ring.head.0.load(Ordering::Relaxed);
            ring.consume(|a, b| sink.write_ring(a, b, &mut clock, &stats));
            assert!(ring.head.0.load(Ordering::Relaxed) > before, "progress");
            if sink.write_full(&stats) {
                writes += 1;
                assert!(!sink.write_full(&stats), "and it is empty now");
            }
        }
        sink.flush(&stats);
        assert!(writes >= 1, "the buffer filled at least once");
        let text = std::fs::read_to_string(&path).unwrap();
        let names: Vec<String> = text
            .lines()
            .map(|l| l.split(' ').nth(3).unwrap().to_string())
            .collect();
        let expected: Vec<String> = (0..lines).map(|i| format!("n{i}.test.")).collect();
        assert_eq!(names, expected);
        assert_eq!(stats.written.load(Ordering::Relaxed), lines as u64);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn sampling_logs_one_in_n() {
        let dir = scratch("sample");
        let path = dir.join("q.log");
        let mut c = config(Destination::File(path.clone()), 64);
        c.sample = 10;
        let log = QueryLog::open(&c).unwrap();
        let peer = "192.0.2.1:5".parse().unwrap();
        for i in 0..100 {
            log.record(&numbered_query(i), None, peer, Transport::Tcp);
        }
        log.set_sample(1);
        log.record(&numbered_query(7777), None, peer, Transport::Tcp);
        log.close(Duration::from_secs(10));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 11, "{text}");
        assert!(text.lines().last().unwrap().contains(" tcp n7777.test. "));
        assert_eq!(log.stats().dropped.load(Ordering::Relaxed), 0);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_stuck_writer_makes_the_answer_path_drop_and_count() {
        let dir = scratch("stuck");
        let socket_path = dir.join("log.sock");
        // A syslog socket nobody reads: the writer blocks once its queue is full.
        let reader = UnixDatagram::bind(&socket_path).unwrap();
        let log = QueryLog::open(&config(Destination::Syslog(socket_path), 4)).unwrap();
        let peer = "192.0.2.1:5".parse().unwrap();
        let started = Instant::now();
        for i in 0..2000 {
            log.record(&numbered_query(i), None, peer, Transport::Udp);
            if i % 100 == 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // (no timing assertion: the loop returning at all shows nothing waited)
        let elapsed = started.elapsed();
        let dropped = log.stats().dropped.load(Ordering::Relaxed);
        let written = log.stats().written.load(Ordering::Relaxed);
        assert!(
            dropped > 0,
            "nothing dropped (written {written}, {elapsed:?})"
        );
        // Unaccounted at most: a ring of 64 words (12 of these 5-word
        // records) and the ring-full the writer took and is sending.
        assert!(
            dropped + written >= 2000 - 25,
            "dropped {dropped} written {written}"
        );
        let mut buf = [0u8; 512];
        let n = reader.recv(&mut buf).unwrap();
        let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(
            msg.starts_with("<30>") && msg.contains(" mongodns["),
            "{msg}"
        );
        assert!(msg.ends_with(" udp n0.test. IN A DROPPED rd 0"), "{msg}");
        // The reader goes away: the writer's sends fail, it drains and stops.
        drop(reader);
        log.close(Duration::from_secs(10));
        assert!(log.writer.lock().unwrap().is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_file_rotates_by_size_keeping_n() {
        let dir = scratch("rotate");
        let path = dir.join("q.log");
        let mut c = config(Destination::File(path.clone()), 1024);
        c.max_bytes = 1000;
        c.keep = 2;
        let log = QueryLog::open(&c).unwrap();
        let peer = "192.0.2.1:5".parse().unwrap();
        for i in 0..100 {
            log.record(&numbered_query(i), None, peer, Transport::Udp);
        }
        log.close(Duration::from_secs(10));
        let rotations = log.stats().rotations.load(Ordering::Relaxed);
        assert!(rotations >= 5, "{rotations}");
        let numbered = |n: usize| dir.join(format!("q.log.{n}"));
        assert!(numbered(1).exists() && numbered(2).exists());
        assert!(!numbered(3).exists(), "only 2 kept");
        for p in [path.clone(), numbered(1), numbered(2)] {
            let len = std::fs::metadata(&p).unwrap().len();
            assert!(len > 0 && len <= 1000, "{}: {len}", p.display());
        }
        // The newest line is in the live file, the ones before it in .1.
        let live = std::fs::read_to_string(&path).unwrap();
        assert!(
            live.lines().last().unwrap().contains(" n99.test. "),
            "{live}"
        );
        let one = std::fs::read_to_string(numbered(1)).unwrap();
        let last_of_one: usize = one.lines().count();
        assert!(last_of_one > 0);
        let _ = std::fs::remove_dir_all(dir);
    }
}
