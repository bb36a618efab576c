//! The query log's tests: the codec, the ring, formatting, the sinks and
//! the whole log, through its public face and its parts.

use super::format::{format_body, push_rfc3164_time, push_rfc3339, Clock, Out, MAX_LINE};
use super::record::{decode, encode, MAX_RECORD};
use super::ring::Ring;
use super::sink::{open_append, Sink};
use super::*;
use backend_mongo::civil::civil_from_days;
use std::net::IpAddr;
use std::os::unix::net::UnixDatagram;

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
