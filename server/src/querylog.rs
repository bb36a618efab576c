//! The query log: one line per query, written by a thread of its own.
//!
//! ```text
//!  answer path (UDP loop, tasks)            writer thread
//!  record(): sample 1 in N ─► copy query ─► bounded channel ─► format ─► file (buffered)
//!            (full: drop, count)                                  └─► or syslog socket
//!  SIGHUP ─► reopen() ─► the writer reopens the file (logrotate) or reconnects
//!  file above query_log_max_mb ─► FILE.1 … FILE.keep shifted, FILE started again
//! ```
//!
//! Nothing on the answer path formats, allocates, locks or waits: it copies
//! the query's first bytes and the reply's header into a fixed-size entry and
//! offers it to the channel. All parsing and formatting happens in the writer.
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
use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Bytes of the query kept per entry: the header and a question with the
/// longest name, plus the start of an OPT record.
const QUERY_BYTES: usize = 12 + 255 + 4 + 11;

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
    /// Entries waiting for the writer at most.
    pub buffer: usize,
    /// Rotate the file at this size (0: never by size).
    pub max_bytes: u64,
    /// Rotated files kept.
    pub keep: usize,
    /// Syslog line format.
    pub syslog_format: SyslogFormat,
}

/// One logged query, as copied on the answer path.
struct Entry {
    unix_us: u64,
    peer: SocketAddr,
    tcp: bool,
    /// Reply header bytes 2..4 (flags and rcode).
    reply_flags: [u8; 2],
    /// Reply length; `None` when nothing was sent.
    reply_len: Option<u16>,
    query_len: u16,
    query: [u8; QUERY_BYTES],
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

struct Shared {
    stats: QueryLogStats,
    reopen: AtomicBool,
    closing: AtomicBool,
}

/// The answer path's handle on the query log.
pub struct QueryLog {
    tx: SyncSender<Entry>,
    sample: AtomicU32,
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

thread_local! {
    static TICK: Cell<u32> = const { Cell::new(0) };
}

impl QueryLog {
    /// Opens the destination (an error here is a start-up error) and starts
    /// the writer thread.
    pub fn open(config: &QueryLogConfig) -> io::Result<QueryLog> {
        let sink = Sink::open(config)?;
        let (tx, rx) = mpsc::sync_channel(config.buffer.max(1));
        let shared = Arc::new(Shared {
            stats: QueryLogStats::default(),
            reopen: AtomicBool::new(false),
            closing: AtomicBool::new(false),
        });
        let writer_shared = shared.clone();
        let writer = std::thread::Builder::new()
            .name("query-log".into())
            .spawn(move || write_loop(rx, sink, writer_shared))?;
        Ok(QueryLog {
            tx,
            sample: AtomicU32::new(config.sample.max(1)),
            shared,
            writer: Mutex::new(Some(writer)),
        })
    }

    /// Offers one query to the log; never waits. `reply` is `None` when
    /// nothing was sent.
    #[inline]
    pub fn record(
        &self,
        query: &[u8],
        reply: Option<&[u8]>,
        peer: SocketAddr,
        transport: Transport,
    ) {
        let n = self.sample.load(Ordering::Relaxed);
        if n > 1 {
            let skip = TICK.with(|t| {
                let v = t.get().wrapping_add(1);
                t.set(v);
                v % n != 0
            });
            if skip {
                return;
            }
        }
        let unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let take = query.len().min(QUERY_BYTES);
        let mut entry = Entry {
            unix_us,
            peer,
            tcp: transport == Transport::Tcp,
            reply_flags: [0, 0],
            reply_len: reply.map(|r| r.len().min(usize::from(u16::MAX)) as u16),
            query_len: take as u16,
            query: [0; QUERY_BYTES],
        };
        entry.query[..take].copy_from_slice(&query[..take]);
        if let Some(r) = reply.filter(|r| r.len() >= 4) {
            entry.reply_flags = [r[2], r[3]];
        }
        match self.tx.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Asks the writer to reopen its file or socket (SIGHUP).
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::Relaxed);
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
        self.shared.closing.store(true, Ordering::Relaxed);
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

enum Sink {
    File {
        path: PathBuf,
        out: BufWriter<File>,
        size: u64,
        max_bytes: u64,
        keep: usize,
    },
    Syslog {
        path: PathBuf,
        socket: Option<UnixDatagram>,
        format: SyslogFormat,
        host: String,
        pid: u32,
    },
}

fn open_append(path: &Path) -> io::Result<(BufWriter<File>, u64)> {
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let size = file.metadata()?.len();
    Ok((BufWriter::with_capacity(256 * 1024, file), size))
}

fn connect_syslog(path: &Path) -> io::Result<UnixDatagram> {
    let socket = UnixDatagram::unbound()?;
    socket.connect(path)?;
    Ok(socket)
}

impl Sink {
    fn open(config: &QueryLogConfig) -> io::Result<Sink> {
        match &config.destination {
            Destination::File(path) => {
                let (out, size) = open_append(path).map_err(|e| {
                    io::Error::new(e.kind(), format!("query log {}: {e}", path.display()))
                })?;
                Ok(Sink::File {
                    path: path.clone(),
                    out,
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
                Ok(Sink::Syslog {
                    path: path.clone(),
                    socket: Some(socket),
                    format: config.syslog_format,
                    host,
                    pid: std::process::id(),
                })
            }
        }
    }

    /// Writes one line (`time` and `body` without newline).
    fn write(&mut self, unix_us: u64, body: &[u8], stats: &QueryLogStats) {
        match self {
            Sink::File {
                path,
                out,
                size,
                max_bytes,
                keep,
            } => {
                let mut line = Vec::with_capacity(body.len() + 40);
                push_rfc3339(&mut line, unix_us);
                line.push(b' ');
                line.extend_from_slice(body);
                line.push(b'\n');
                if *max_bytes > 0 && *size > 0 && *size + line.len() as u64 > *max_bytes {
                    match rotate(path, out, *keep) {
                        Ok(()) => {
                            *size = 0;
                            stats.rotations.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => tracing::warn!(error = %e, "query log rotation failed"),
                    }
                }
                match out.write_all(&line) {
                    Ok(()) => {
                        *size += line.len() as u64;
                        stats.written.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        stats.write_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Sink::Syslog {
                socket,
                format,
                host,
                pid,
                ..
            } => {
                let Some(s) = socket else {
                    stats.write_errors.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                // facility daemon (3), severity info (6)
                let mut msg = Vec::with_capacity(body.len() + 64);
                match format {
                    SyslogFormat::Rfc3164 => {
                        msg.extend_from_slice(b"<30>");
                        push_rfc3164_time(&mut msg, unix_us);
                        msg.extend_from_slice(format!(" mongodns[{pid}]: ").as_bytes());
                    }
                    SyslogFormat::Rfc5424 => {
                        msg.extend_from_slice(b"<30>1 ");
                        push_rfc3339(&mut msg, unix_us);
                        msg.extend_from_slice(
                            format!(" {host} mongodns {pid} query - ").as_bytes(),
                        );
                    }
                }
                msg.extend_from_slice(body);
                match s.send(&msg) {
                    Ok(_) => {
                        stats.written.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        stats.write_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    fn flush(&mut self, stats: &QueryLogStats) {
        if let Sink::File { out, .. } = self {
            if out.flush().is_err() {
                stats.write_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn reopen(&mut self, stats: &QueryLogStats) {
        self.flush(stats);
        match self {
            Sink::File {
                path, out, size, ..
            } => match open_append(path) {
                Ok((new_out, new_size)) => {
                    *out = new_out;
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
fn rotate(path: &Path, out: &mut BufWriter<File>, keep: usize) -> io::Result<()> {
    out.flush()?;
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
    *out = open_append(path)?.0;
    Ok(())
}

/// The writer polls the channel instead of blocking on it: a blocked
/// receiver makes every send on the answer path wake it (a futex call, and
/// on a busy core a context switch per query). Polling, the answer path only
/// ever writes into the ring; the writer sleeps 1 ms when it finds the ring
/// empty (20 ms after a second of silence), which the ring covers easily:
/// 8192 slots are 80 ms at 100,000 queries per second.
fn write_loop(rx: Receiver<Entry>, mut sink: Sink, shared: Arc<Shared>) {
    let stats = &shared.stats;
    let mut body = Vec::with_capacity(512);
    let mut last_flush = Instant::now();
    let mut idle_rounds = 0u32;
    let mut dirty = false;
    loop {
        match rx.try_recv() {
            Ok(entry) => {
                body.clear();
                format_entry(&entry, &mut body);
                sink.write(entry.unix_us, &body, stats);
                idle_rounds = 0;
                dirty = true;
                // Under steady load, flush at least twice a second.
                if last_flush.elapsed() >= Duration::from_millis(500) {
                    sink.flush(stats);
                    last_flush = Instant::now();
                    dirty = false;
                }
            }
            Err(TryRecvError::Empty) => {
                if dirty {
                    // Caught up: what was written reaches the file now.
                    sink.flush(stats);
                    last_flush = Instant::now();
                    dirty = false;
                }
                if shared.closing.load(Ordering::Relaxed) {
                    break;
                }
                idle_rounds = idle_rounds.saturating_add(1);
                let nap = if idle_rounds < 1000 { 1 } else { 20 };
                std::thread::sleep(Duration::from_millis(nap));
            }
            Err(TryRecvError::Disconnected) => break,
        }
        if shared.reopen.load(Ordering::Relaxed) {
            shared.reopen.store(false, Ordering::Relaxed);
            sink.reopen(stats);
        }
    }
    sink.flush(stats);
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

fn push_name(out: &mut Vec<u8>, query: &[u8], end: usize) {
    let mut at = 12;
    if end == 13 {
        out.push(b'.');
        return;
    }
    while at + 1 < end {
        let len = query[at] as usize;
        for &b in &query[at + 1..at + 1 + len] {
            match b {
                b'.' | b'\\' | b'"' | b';' | b'(' | b')' | b'@' | b'$' => {
                    out.push(b'\\');
                    out.push(b);
                }
                0x21..=0x7e => out.push(b),
                _ => out.extend_from_slice(format!("\\{b:03}").as_bytes()),
            }
        }
        out.push(b'.');
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

fn format_entry(e: &Entry, out: &mut Vec<u8>) {
    use std::io::Write as _;
    let q = &e.query[..usize::from(e.query_len)];
    let _ = write!(
        out,
        "{}#{} {} ",
        e.peer.ip(),
        e.peer.port(),
        if e.tcp { "tcp" } else { "udp" }
    );
    let end = question_name_end(q).filter(|end| end + 4 <= q.len());
    let Some(end) = end else {
        out.extend_from_slice(b"- - - ");
        finish(e, out, false, false);
        return;
    };
    push_name(out, q, end);
    let qtype = u16::from_be_bytes([q[end], q[end + 1]]);
    let qclass = u16::from_be_bytes([q[end + 2], q[end + 3]]);
    let class = match qclass {
        1 => "IN".to_string(),
        3 => "CH".to_string(),
        4 => "HS".to_string(),
        255 => "ANY".to_string(),
        c => format!("CLASS{c}"),
    };
    let _ = write!(out, " {class} {} ", backend_mongo::RType(qtype).mnemonic());
    // An OPT record right after the question (the common shape: no answer
    // or authority records in a query).
    let o = end + 4;
    let counts_plain = q.len() >= 12 && q[6..10] == [0, 0, 0, 0] && q[10..12] != [0, 0];
    let edns = counts_plain && q.len() >= o + 9 && q[o] == 0 && q[o + 1..o + 3] == [0, 41];
    let dnssec_ok = edns && q[o + 7] & 0x80 != 0;
    finish(e, out, edns, dnssec_ok);
}

fn finish(e: &Entry, out: &mut Vec<u8>, edns: bool, dnssec_ok: bool) {
    use std::io::Write as _;
    let q = &e.query[..usize::from(e.query_len)];
    let rd = q.len() > 2 && q[2] & 0x01 != 0;
    let Some(size) = e.reply_len else {
        let _ = write!(out, "DROPPED {} 0", if rd { "rd" } else { "-" });
        return;
    };
    out.extend_from_slice(rcode_name(e.reply_flags[1] & 0x0f).as_bytes());
    out.push(b' ');
    let mut flags: Vec<&str> = Vec::with_capacity(5);
    if rd {
        flags.push("rd");
    }
    if edns {
        flags.push("e");
    }
    if dnssec_ok {
        flags.push("do");
    }
    if e.reply_flags[0] & 0x04 != 0 {
        flags.push("aa");
    }
    if e.reply_flags[0] & 0x02 != 0 {
        flags.push("tc");
    }
    if flags.is_empty() {
        out.push(b'-');
    } else {
        out.extend_from_slice(flags.join(",").as_bytes());
    }
    let _ = write!(out, " {size}");
}

/// Days since 1970-01-01 ─► (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    // Eras of 400 years (146097 days) starting on 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn push_rfc3339(out: &mut Vec<u8>, unix_us: u64) {
    use std::io::Write as _;
    let secs = (unix_us / 1_000_000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let _ = write!(
        out,
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        unix_us % 1_000_000
    );
}

fn push_rfc3164_time(out: &mut Vec<u8>, unix_us: u64) {
    use std::io::Write as _;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = (unix_us / 1_000_000) as i64;
    let (_, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let _ = write!(
        out,
        "{} {d:>2} {:02}:{:02}:{:02}",
        MONTHS[(mo - 1) as usize],
        s / 3600,
        s / 60 % 60,
        s % 60
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let mut v = Vec::new();
        push_rfc3339(&mut v, 0);
        assert_eq!(v, b"1970-01-01T00:00:00.000000Z");
        v.clear();
        // 2024-02-29T12:34:56.789Z (a leap day)
        push_rfc3339(&mut v, 1_709_210_096_789_000);
        assert_eq!(String::from_utf8(v).unwrap(), "2024-02-29T12:34:56.789000Z");
        let mut v = Vec::new();
        push_rfc3164_time(&mut v, 1_709_210_096_789_000);
        assert_eq!(String::from_utf8(v).unwrap(), "Feb 29 12:34:56");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
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

    fn entry(q: &[u8], reply: Option<(u8, u8, u16)>) -> Entry {
        let mut e = Entry {
            unix_us: 0,
            peer: "192.0.2.7:53124".parse().unwrap(),
            tcp: false,
            reply_flags: reply.map_or([0, 0], |r| [r.0, r.1]),
            reply_len: reply.map(|r| r.2),
            query_len: q.len() as u16,
            query: [0; QUERY_BYTES],
        };
        e.query[..q.len()].copy_from_slice(q);
        e
    }

    #[test]
    fn lines() {
        let q = query(b"\x03www\x07Example\x03com\x00", 1, Some(true));
        let mut out = Vec::new();
        format_entry(&entry(&q, Some((0x85, 0x00, 56))), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "192.0.2.7#53124 udp www.Example.com. IN A NOERROR rd,e,do,aa 56"
        );
        let q = query(b"\x02a.\x00", 28, None);
        let mut out = Vec::new();
        format_entry(&entry(&q, Some((0x84, 0x03, 90))), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "192.0.2.7#53124 udp a\\.. IN AAAA NXDOMAIN rd,aa 90"
        );
        let mut out = Vec::new();
        format_entry(&entry(&[1, 2, 0], None), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "192.0.2.7#53124 udp - - - DROPPED - 0"
        );
    }
}
