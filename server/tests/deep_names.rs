//! Deep and random names against the real server and database: the name
//! walk stops at the first missing level, so a name 115 labels deep costs a
//! read or two, not one per label; a missing level is remembered, so names
//! below it cost none; wildcards keep RFC 4592's closest-encloser rule; and
//! a flood of random deep names (1,000 a second, or half what the database
//! answers alone when that is less) does not push legitimate misses into
//! SERVFAIL.

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ZONE: &str = "$ORIGIN deep.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\na.b IN A 192.0.2.2\n*.wild IN TXT \"synthesized\"\nhost.wild IN A 192.0.2.3\nsub IN NS ns.elsewhere.example.\n";

/// A small xorshift generator; the seed is printed so a run can be replayed.
struct Rng(u64);

impl Rng {
    fn from_clock(test: &str) -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        println!("{test}: seed {seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` random letters and digits.
    fn label(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALPHABET[(self.next() % 36) as usize] as char)
            .collect()
    }

    /// A name `labels` labels deep above `suffix`: the top one (right
    /// under `suffix`) of 8 characters, the others of one.
    fn deep_name(&mut self, labels: usize, suffix: &str) -> String {
        let mut parts: Vec<String> = (1..labels).map(|_| self.label(1)).collect();
        parts.push(self.label(8));
        format!("{}.{suffix}", parts.join("."))
    }
}

fn start(tag: &str, zone: &str) -> (TestZoneDb, ServerProcess, u16) {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import("deep.test.", zone, false).await;
        db
    });
    let control = free_tcp_port();
    let server = ServerProcess::start(
        &db.name,
        &["--control-listen", &format!("127.0.0.1:{control}")],
    );
    (db, server, control)
}

fn rcode(port: u16, name: &str, qtype: u16) -> ResponseCode {
    ask_udp(port, name, qtype, None).metadata.response_code
}

#[test]
fn deep_names_cost_a_read_or_two_not_one_per_label() {
    let (db, server, control) = start("deepreads", ZONE);
    let port = server.port;
    assert_eq!(rcode(port, "deep.test.", 6), ResponseCode::NoError);
    let mut rng = Rng::from_clock("deep_names_cost_a_read_or_two");
    // 113 labels above the apex's two: 115 labels, 244 octets.
    let before = stat(control, "db_queries");
    for _ in 0..20 {
        let name = rng.deep_name(113, "deep.test.");
        assert_eq!(rcode(port, &name, 1), ResponseCode::NXDomain, "{name}");
    }
    let reads = stat(control, "db_queries") - before;
    println!("20 names 115 labels deep: {reads} database reads");
    // One read each (the first missing level), and one for *.deep.test.
    assert!(reads <= 2 * 20, "{reads} reads for 20 deep names");
    // Below stored names: b and a.b are read once, then one read a name.
    let before = stat(control, "db_queries");
    for _ in 0..20 {
        let name = rng.deep_name(100, "a.b.deep.test.");
        assert_eq!(rcode(port, &name, 1), ResponseCode::NXDomain, "{name}");
    }
    let reads = stat(control, "db_queries") - before;
    println!("20 names 104 labels deep below a.b: {reads} database reads");
    assert!(reads <= 2 * 20 + 3, "{reads} reads for 20 deep names");
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn a_missing_level_answers_every_name_below_it_without_a_read() {
    let (db, server, control) = start("deepneg", ZONE);
    let port = server.port;
    assert_eq!(rcode(port, "x.gone.deep.test.", 1), ResponseCode::NXDomain);
    let before = stat(control, "db_queries");
    for i in 0..20 {
        let name = format!("y{i}.z.w.gone.deep.test.");
        assert_eq!(rcode(port, &name, 1), ResponseCode::NXDomain, "{name}");
        let name = format!("v{i}.gone.deep.test.");
        assert_eq!(rcode(port, &name, 28), ResponseCode::NXDomain, "{name}");
    }
    assert_eq!(
        stat(control, "db_queries"),
        before,
        "gone.deep.test. is known missing: no name below it is read"
    );
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn deep_names_keep_the_wildcard_and_delegation_rules() {
    let (db, server, _control) = start("deepwild", ZONE);
    let port = server.port;
    // RFC 4592: the closest encloser of q1.q2.q3.wild is wild, whose
    // wildcard synthesizes the answer under the question's name.
    let m = ask_udp(port, "q1.q2.q3.wild.deep.test.", 16, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert_eq!(
        lines(&m.answers),
        vec!["q1.q2.q3.wild.deep.test. 300 TXT synthesized"]
    );
    // host.wild exists: it is the closest encloser of q.host.wild, and
    // *.host.wild does not exist, so the wildcard above does not apply.
    assert_eq!(
        rcode(port, "q.host.wild.deep.test.", 16),
        ResponseCode::NXDomain
    );
    assert_eq!(
        rcode(port, "host.wild.deep.test.", 1),
        ResponseCode::NoError
    );
    // An empty non-terminal is the closest encloser below it.
    assert_eq!(rcode(port, "b.deep.test.", 1), ResponseCode::NoError);
    assert_eq!(rcode(port, "x.y.b.deep.test.", 1), ResponseCode::NXDomain);
    // Deep below a cut: a referral to the child.
    let m = ask_udp(port, "x.y.z.sub.deep.test.", 1, None);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.answers.is_empty());
    assert_eq!(
        lines(&m.authorities),
        vec!["sub.deep.test. 300 NS ns.elsewhere.example."]
    );
    drop(server);
    block_on(db.drop_db());
}

/// Sends random deep names at about `rate` a second until `stop` is set,
/// never reading the replies; returns how many were sent and for how long.
fn flood(port: u16, rate: u64, stop: Arc<AtomicBool>) -> (u64, Duration) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut rng = Rng::from_clock("flood");
    let started = Instant::now();
    let mut sent = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let due = started.elapsed().as_millis() as u64 * rate / 1000;
        while sent < due {
            let name = rng.deep_name(100, "deep.test.");
            let q = build_query(sent as u16, &name, 1, None, false);
            let _ = socket.send_to(&q, ("127.0.0.1", port));
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (sent, started.elapsed())
}

/// How many one-read misses a second the server answers now: 400 names
/// never asked, sent at once.
fn misses_per_second(port: u16) -> f64 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    for i in 0..400u16 {
        let q = build_query(i, &format!("cal{i}.deep.test."), 1, None, false);
        socket.send_to(&q, ("127.0.0.1", port)).unwrap();
    }
    let mut buf = [0u8; 512];
    let mut got = 0;
    while got < 400 && socket.recv(&mut buf).is_ok() {
        got += 1;
    }
    got as f64 / started.elapsed().as_secs_f64()
}

#[test]
fn random_deep_names_do_not_push_legitimate_misses_into_servfail() {
    let mut zone = ZONE.to_string();
    for i in 0..200 {
        zone.push_str(&format!("host{i} IN A 192.0.2.10\n"));
    }
    let (db, server, control) = start("deepflood", &zone);
    let port = server.port;
    assert_eq!(rcode(port, "deep.test.", 6), ResponseCode::NoError);
    let pipeline_before = stat(control, "pipeline_queries");
    let shed_before = stat(control, "db_shed");
    // The database's pace on this machine now: a flood the database could
    // not serve says nothing about the walk. A random deep name costs up
    // to two reads, so a third of the one-read miss rate keeps the flood
    // at about two thirds of what the database can do (half, as before,
    // was all of it, and any other load on the machine tipped it over).
    let capacity = misses_per_second(port);
    let rate = 1000.min(capacity as u64 / 3).max(50);
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flood = stop.clone();
    let attacker = std::thread::spawn(move || flood(port, rate, stop_flood));
    std::thread::sleep(Duration::from_millis(500));
    // 100 legitimate misses while the flood runs: names never asked
    // before, half of them stored, half not.
    let (mut servfail, mut lost) = (0, 0);
    let mut slowest = Duration::ZERO;
    for i in 0..100 {
        let (name, expect) = match i % 2 {
            0 => (format!("host{i}.deep.test."), ResponseCode::NoError),
            _ => (format!("missing{i}.deep.test."), ResponseCode::NXDomain),
        };
        let q = build_query(i, &name, 1, None, false);
        let sent = Instant::now();
        match udp_exchange(port, &q, Duration::from_secs(3)) {
            None => lost += 1,
            Some(raw) => {
                slowest = slowest.max(sent.elapsed());
                let m = hickory_proto::op::Message::from_vec(&raw).unwrap();
                match m.metadata.response_code {
                    ResponseCode::ServFail => servfail += 1,
                    code => assert_eq!(code, expect, "{name}"),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    stop.store(true, Ordering::Relaxed);
    let (flooded, took) = attacker.join().unwrap();
    let pipeline = stat(control, "pipeline_queries") - pipeline_before;
    println!(
        "flood at {rate}/s (misses answered at {capacity:.0}/s alone): {flooded} random deep names \
         sent in {took:?}, {pipeline} pipeline runs, {} reads shed; 100 legitimate misses: \
         {servfail} SERVFAIL, {lost} lost, slowest {slowest:?}",
        stat(control, "db_shed") - shed_before
    );
    assert!(
        pipeline >= flooded / 2,
        "the flood reached the server ({pipeline} of {flooded})"
    );
    assert_eq!((servfail, lost), (0, 0), "legitimate misses failed");
    drop(server);
    block_on(db.drop_db());
}
