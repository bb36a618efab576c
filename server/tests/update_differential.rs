//! DNS UPDATE, differential: the same seeded random UPDATE messages sent to
//! Knot DNS (DDNS) and to mongodns, both serving the same zone; every
//! message must get the same rcode from both, and after every batch the two
//! zones, by AXFR, must be the same records (the SOA serial included).
//!
//! ```text
//!  seed (UPDATE_DIFF_SEED, printed) ─► messages of 1–3 updates over a small
//!  pool of names, types and values (adds, deletes of records, RRsets and
//!  names; CNAMEs; sometimes a prerequisite) ─► TSIG-signed ─► knotd and
//!  mongodns over UDP ─► rcodes compared ─► every 20: AXFR both, compared
//! ```

use mongodns_server::tsig::{sign_request, TsigKey};
use mongodns_testkit::*;
use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const ZONE: &str = "upd.test.";
const SECRET: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTAxMjM=";

const ZONE_TEXT: &str = small_zone!(
    "upd.test.",
    "a IN A 192.0.2.1\n\
     b IN TXT \"one\"\n"
);

const CLASS_IN: u16 = 1;
const CLASS_NONE: u16 = 254;
const CLASS_ANY: u16 = 255;

type Rr = UpdateRr;

fn wire_name(name: &str) -> Vec<u8> {
    let n: dns::Name = name.parse().unwrap();
    n.as_wire().to_vec()
}

const OWNERS: &[&str] = &[
    "upd.test.",
    "a.upd.test.",
    "b.upd.test.",
    "c.upd.test.",
    "x.d.upd.test.",
    "d.upd.test.",
];

/// A type and one of a few values of it.
fn random_rdata(rng: &mut Rng) -> (u16, Vec<u8>) {
    match rng.below(5) {
        0 => (1, vec![192, 0, 2, 1 + rng.below(3) as u8]),
        1 => (16, vec![3, b'v', b'a', b'0' + rng.below(3) as u8]),
        2 => {
            let mut rd = vec![0, 10 * (1 + rng.below(2) as u8)];
            rd.extend(wire_name(OWNERS[1 + rng.below(2) as usize]));
            (15, rd)
        }
        3 => (5, wire_name(OWNERS[1 + rng.below(2) as usize])),
        _ => (
            28,
            [
                &[0x20, 0x01, 0x0d, 0xb8][..],
                &[0; 11],
                &[1 + rng.below(2) as u8],
            ]
            .concat(),
        ),
    }
}

fn random_update(rng: &mut Rng) -> Rr {
    let owner = OWNERS[rng.below(OWNERS.len() as u64) as usize].to_string();
    let (rtype, rdata) = random_rdata(rng);
    match rng.below(10) {
        0..=4 => Rr {
            owner,
            rtype,
            class: CLASS_IN,
            ttl: [300, 60][rng.below(2) as usize],
            rdata,
        },
        5 | 6 => Rr {
            owner,
            rtype,
            class: CLASS_NONE,
            ttl: 0,
            rdata,
        },
        7 | 8 => Rr {
            owner,
            rtype,
            class: CLASS_ANY,
            ttl: 0,
            rdata: Vec::new(),
        },
        _ => Rr {
            owner,
            rtype: 255,
            class: CLASS_ANY,
            ttl: 0,
            rdata: Vec::new(),
        },
    }
}

fn random_prerequisite(rng: &mut Rng) -> Rr {
    let owner = OWNERS[rng.below(OWNERS.len() as u64) as usize].to_string();
    let (rtype, _) = random_rdata(rng);
    let (rtype, class) = match rng.below(4) {
        0 => (255, CLASS_ANY),
        1 => (255, CLASS_NONE),
        2 => (rtype, CLASS_ANY),
        _ => (rtype, CLASS_NONE),
    };
    Rr {
        owner,
        rtype,
        class,
        ttl: 0,
        rdata: Vec::new(),
    }
}

/// An UPDATE message of `prereqs` and `updates`, TSIG-signed.
fn message(id: u16, prereqs: &[Rr], updates: &[Rr], key: &TsigKey) -> Vec<u8> {
    let mut m = update_message(id, ZONE, prereqs, updates);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    sign_request(&mut m, key, now);
    m
}

/// Sends `msg` over UDP; the reply's rcode.
fn rcode(port: u16, msg: &[u8]) -> u8 {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.send_to(msg, ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 4096];
    let n = s.recv(&mut buf).expect("an UPDATE reply");
    assert!(n >= 12 && buf[..2] == msg[..2], "a reply to the message");
    buf[3] & 0xF
}

/// The zone's records by AXFR, normalised: one line each, sorted, the
/// SOA once.
fn records(port: u16) -> BTreeSet<String> {
    record_lines(&axfr_text(port, ZONE)).into_iter().collect()
}

fn start_knot(dir: &Path, port: u16) -> Child {
    let zones = dir.join("zones");
    std::fs::create_dir_all(&zones).unwrap();
    std::fs::write(zones.join("upd.test.zone"), ZONE_TEXT).unwrap();
    let d = dir.display();
    let conf = format!(
        "server:\n    rundir: {d}\n    listen: 127.0.0.1@{port}\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n\
database:\n    storage: {d}\n\
log:\n  - target: stderr\n    any: error\n\
key:\n  - id: upd\n    algorithm: hmac-sha256\n    secret: {SECRET}\n\
acl:\n  - id: xfr\n    address: 127.0.0.0/8\n    action: transfer\n  - id: upd\n    key: upd\n    action: update\n\
template:\n  - id: default\n    storage: {}\n    semantic-checks: off\n    zonefile-sync: -1\n    journal-content: none\n    acl: [xfr, upd]\n\
zone:\n  - domain: {ZONE}\n    file: upd.test.zone\n",
        zones.display()
    );
    let path = dir.join("knot.conf");
    std::fs::write(&path, conf).unwrap();
    let log = std::fs::File::create(dir.join("knotd.log")).unwrap();
    let child = Command::new("knotd")
        .arg("-c")
        .arg(&path)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("knotd is needed (Debian's knot)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while ask_udp_ok(port).is_none() {
        assert!(
            Instant::now() < deadline,
            "knotd did not start: {}",
            std::fs::read_to_string(dir.join("knotd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn ask_udp_ok(port: u16) -> Option<()> {
    let q = build_query(1, ZONE, 6, None, false);
    udp_exchange(port, &q, Duration::from_millis(200)).map(|_| ())
}

#[test]
fn random_updates_give_the_same_rcodes_and_zones_as_knot() {
    let seed = seed("UPDATE_DIFF_SEED");
    let messages: usize = std::env::var("UPDATE_DIFF_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    eprintln!("update differential: UPDATE_DIFF_SEED={seed} UPDATE_DIFF_MESSAGES={messages}");
    let db = zone_db("upd_diff", ZONE, ZONE_TEXT);
    let key_arg = format!("hmac-sha256:upd:{SECRET} zones={ZONE} update");
    let ours = ServerProcess::start(
        &db.name,
        &["--tsig-key", &key_arg, "--axfr-allow", "127.0.0.1/32"],
    );
    let knot_port = free_port();
    let mut knot = start_knot(&db.dir, knot_port);
    let key: TsigKey = format!("hmac-sha256:upd:{SECRET}").parse().unwrap();
    let mut rng = Rng(seed);
    let mut rcodes = [0usize; 16];
    for i in 0..messages {
        let prereqs: Vec<Rr> = (0..u64::from(rng.below(4) == 0))
            .map(|_| random_prerequisite(&mut rng))
            .collect();
        let updates: Vec<Rr> = (0..1 + rng.below(3))
            .map(|_| random_update(&mut rng))
            .collect();
        let msg = message(i as u16, &prereqs, &updates, &key);
        let (theirs, mine) = (rcode(knot_port, &msg), rcode(ours.port, &msg));
        let show = || {
            updates
                .iter()
                .map(|r| {
                    format!(
                        "{} {} class {} ttl {} rdata {:?}",
                        r.owner, r.rtype, r.class, r.ttl, r.rdata
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let shown_prereqs: Vec<String> = prereqs
            .iter()
            .map(|r| format!("{} {} class {}", r.owner, r.rtype, r.class))
            .collect();
        assert_eq!(
            mine,
            theirs,
            "message {i}: rcode (ours, Knot's); prerequisites {shown_prereqs:?}; updates {}",
            show()
        );
        rcodes[usize::from(mine)] += 1;
        // The serials move together: one per change-set that changed something.
        let zone: dns::Name = ZONE.parse().unwrap();
        let ours_serial = block_on(db.store.find_zone(&zone)).unwrap().unwrap().serial;
        let soa = ask_udp(knot_port, ZONE, 6, None);
        let knot_serial = match soa.answers.first().map(|r| &r.data) {
            Some(hickory_proto::rr::RData::SOA(s)) => s.serial,
            other => panic!("Knot's SOA: {other:?}"),
        };
        assert_eq!(
            ours_serial,
            knot_serial,
            "message {i}: the serial (ours, Knot's); prerequisites {shown_prereqs:?}; updates {}",
            show()
        );
        if i % 20 == 19 || i + 1 == messages {
            // Both publish within a second.
            let deadline = Instant::now() + Duration::from_secs(2);
            let want = records(knot_port);
            loop {
                let got = records(ours.port);
                if got == want {
                    break;
                }
                if Instant::now() > deadline {
                    let only_ours: Vec<_> = got.difference(&want).collect();
                    let only_knot: Vec<_> = want.difference(&got).collect();
                    panic!("after message {i}: the zones differ: only ours {only_ours:?}, only Knot's {only_knot:?}; last updates {}", show());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    eprintln!("{messages} messages, rcodes (NOERROR, …, by number): {:?}; zones equal after every batch of 20", &rcodes[..11]);
    let _ = knot.kill();
    let _ = knot.wait();
    drop(ours);
    block_on(db.drop_db());
}
