//! Where the writer's lines go: a file (buffered, rotated by size, reopened
//! on SIGHUP) or a syslog daemon's datagram socket (one message a line).
//!
//! ```text
//!  write_ring(first, second) ─► whole records ─► write_records
//!     (a record cut by the ring's end: joined in a small copy first)
//!  File:   decode ─► time + body into `pending` ─► past max_bytes? write what
//!          came before, rotate (FILE.1 … FILE.keep), go on in the new file
//!          write_full: `pending` reached WRITE_AT ─► one write()
//!  Syslog: decode ─► <30> time tag body ─► send() (counted written or lost)
//!  reopen (SIGHUP): flush, reopen the file / reconnect the socket
//! ```

use super::format::{format_body, push_rfc3164_time, Clock, Out, MAX_LINE};
use super::record::{decode, record_len, whole_records, Record, MAX_RECORD};
use super::{Destination, QueryLogConfig, QueryLogStats};
use crate::config::SyslogFormat;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

/// The file output writes once this much is formatted (or at a flush).
const WRITE_AT: usize = 192 * 1024;
/// The writer frees the ring words it formatted at least every this many
/// bytes of lines (about 400), so a writer preempted while formatting
/// holds little ring space.
const FREE_EVERY: usize = 32 * 1024;

/// The writer's output.
pub(super) enum Sink {
    /// A file, appended to.
    File(FileSink),
    /// A syslog socket.
    Syslog(SyslogSink),
}

/// The file output.
pub(super) struct FileSink {
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
}

/// The syslog output.
pub(super) struct SyslogSink {
    path: PathBuf,
    socket: Option<UnixDatagram>,
    format: SyslogFormat,
    /// RFC 3164: ` mongodns[PID]: `; RFC 5424: ` HOST mongodns PID query - `.
    tag: Vec<u8>,
    /// One message (room for the tag and the longest line).
    line: Box<[u8]>,
}

/// Opens the log for appending; a new file is readable by its owner only
/// (queries say who asked what).
pub(super) fn open_append(path: &Path) -> io::Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

/// A datagram socket connected to the syslog daemon at `path`.
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
    /// Opens the destination of `config`.
    pub(super) fn open(config: &QueryLogConfig) -> io::Result<Sink> {
        match &config.destination {
            Destination::File(path) => FileSink::open(path, config).map(Sink::File),
            Destination::Syslog(path) => SyslogSink::open(path, config).map(Sink::Syslog),
        }
    }

    /// Formats the records of `bytes` (whole records, as read from a ring)
    /// and writes them: the file output into its buffer, stopping once
    /// `stop` bytes are in it ([`Sink::write_full`] writes it); the
    /// syslog output one message per line, every record. Returns the bytes
    /// of `bytes` done.
    fn write_records(
        &mut self,
        bytes: &[u8],
        stop: usize,
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        match self {
            Sink::File(f) => f.write_records(bytes, stop, clock, stats),
            Sink::Syslog(s) => s.write_records(bytes, clock, stats),
        }
    }

    /// Writes the file output's buffer if [`WRITE_AT`] bytes are ready;
    /// true if it did.
    pub(super) fn write_full(&mut self, stats: &QueryLogStats) -> bool {
        match self {
            Sink::File(f) if f.filled >= WRITE_AT => {
                f.write_pending(stats);
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
    pub(super) fn write_ring(
        &mut self,
        first: &[u8],
        second: &[u8],
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        let stop = match self {
            Sink::File(f) => (f.filled + FREE_EVERY).min(WRITE_AT),
            Sink::Syslog(_) => usize::MAX,
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
    pub(super) fn flush(&mut self, stats: &QueryLogStats) {
        if let Sink::File(f) = self {
            f.write_pending(stats);
        }
    }

    /// Reopens the file or reconnects the socket (SIGHUP), after a flush.
    pub(super) fn reopen(&mut self, stats: &QueryLogStats) {
        self.flush(stats);
        match self {
            Sink::File(f) => f.reopen(stats),
            Sink::Syslog(s) => s.reconnect(),
        }
    }
}

impl FileSink {
    /// Opens `path` for appending (an error names the file).
    fn open(path: &Path, config: &QueryLogConfig) -> io::Result<FileSink> {
        let (file, size) = open_append(path)
            .map_err(|e| io::Error::new(e.kind(), format!("query log {}: {e}", path.display())))?;
        Ok(FileSink {
            path: path.to_path_buf(),
            file,
            pending: vec![0; WRITE_AT + MAX_LINE].into_boxed_slice(),
            filled: 0,
            pending_lines: 0,
            size,
            max_bytes: config.max_bytes,
            keep: config.keep,
        })
    }

    /// [`Sink::write_records`] for the file: lines into `pending` until
    /// `stop` bytes are there, rotating by size on the way.
    fn write_records(
        &mut self,
        mut bytes: &[u8],
        stop: usize,
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        let total = bytes.len();
        while !bytes.is_empty() && self.filled < stop {
            let (record, len) = decode(bytes);
            bytes = &bytes[len..];
            // Straight into the write buffer: no per-line copy.
            let start = self.filled;
            let mut out = Out {
                buf: &mut self.pending,
                at: start,
            };
            clock.push(&mut out, record.unix_us);
            out.byte(b' ');
            format_body(&record, &mut out);
            out.byte(b'\n');
            let end = out.at;
            self.filled = end;
            let line_len = (end - start) as u64;
            if self.max_bytes > 0 && self.size > 0 && self.size + line_len > self.max_bytes {
                self.rotate_before(start, end, stats);
            }
            self.size += line_len;
            self.pending_lines += 1;
        }
        total - bytes.len()
    }

    /// The line at `start..end` of `pending` would pass `max_bytes`: what
    /// came before it goes to the old file, then the file rotates and the
    /// line starts the new one.
    fn rotate_before(&mut self, start: usize, end: usize, stats: &QueryLogStats) {
        write_counted(
            &mut self.file,
            &self.pending[..start],
            self.pending_lines,
            stats,
        );
        self.pending.copy_within(start..end, 0);
        self.filled = end - start;
        self.pending_lines = 0;
        match rotate(&self.path, &mut self.file, self.keep) {
            Ok(()) => {
                self.size = 0;
                stats.rotations.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "query log rotation failed"),
        }
    }

    /// Writes `pending` and empties it.
    fn write_pending(&mut self, stats: &QueryLogStats) {
        write_counted(
            &mut self.file,
            &self.pending[..self.filled],
            self.pending_lines,
            stats,
        );
        self.filled = 0;
        self.pending_lines = 0;
    }

    /// Opens the file again (logrotate moved it); keeps the old one on error.
    fn reopen(&mut self, stats: &QueryLogStats) {
        let path = &self.path;
        match open_append(path) {
            Ok((new_file, new_size)) => {
                self.file = new_file;
                self.size = new_size;
                stats.rotations.fetch_add(1, Ordering::Relaxed);
                tracing::info!(path = %path.display(), "query log reopened");
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "cannot reopen the query log; keeping the old file")
            }
        }
    }
}

impl SyslogSink {
    /// Connects to the socket at `path` and prepares the message tag.
    fn open(path: &Path, config: &QueryLogConfig) -> io::Result<SyslogSink> {
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
        Ok(SyslogSink {
            path: path.to_path_buf(),
            socket: Some(socket),
            format: config.syslog_format,
            line: vec![0; 64 + tag.len() + MAX_LINE].into_boxed_slice(),
            tag: tag.into_bytes(),
        })
    }

    /// [`Sink::write_records`] for syslog: one message per record, all of them.
    fn write_records(
        &mut self,
        mut bytes: &[u8],
        clock: &mut Clock,
        stats: &QueryLogStats,
    ) -> usize {
        let total = bytes.len();
        let (mut written, mut errors) = (0u64, 0u64);
        while !bytes.is_empty() {
            let (record, len) = decode(bytes);
            bytes = &bytes[len..];
            let end = self.format_message(&record, clock);
            if self
                .socket
                .as_ref()
                .is_some_and(|s| s.send(&self.line[..end]).is_ok())
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
        total - bytes.len()
    }

    /// One message into `line`: priority, time, tag, the line's body;
    /// returns its length.
    fn format_message(&mut self, record: &Record, clock: &mut Clock) -> usize {
        let mut out = Out {
            buf: &mut self.line,
            at: 0,
        };
        // facility daemon (3), severity info (6)
        match self.format {
            SyslogFormat::Rfc3164 => {
                out.bytes(b"<30>");
                push_rfc3164_time(&mut out, record.unix_us);
            }
            SyslogFormat::Rfc5424 => {
                out.bytes(b"<30>1 ");
                clock.push(&mut out, record.unix_us);
            }
        }
        out.bytes(&self.tag);
        format_body(record, &mut out);
        out.at
    }

    /// Connects to the socket again (SIGHUP); without a socket lines are
    /// counted as lost until the next reconnect.
    fn reconnect(&mut self) {
        let path = &self.path;
        match connect_syslog(path) {
            Ok(s) => {
                self.socket = Some(s);
                tracing::info!(path = %path.display(), "syslog socket reconnected");
            }
            Err(e) => {
                self.socket = None;
                tracing::error!(path = %path.display(), error = %e, "cannot reconnect to syslog");
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::querylog::record::encode;
    use crate::querylog::ring::Ring;
    use crate::querylog::tests::{config, numbered_query, scratch};

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
}
