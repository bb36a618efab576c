//! Resident zones against the real server and database: a zone
//! held whole in memory answers byte for byte as the record cache's path
//! does, unsigned and signed (NSEC, NSEC3), over TCP and over UDP (where
//! plain questions are answered in one step), with no database read, and
//! transfers the same zone from memory; merge,
//! record edit, replace and secure-zone are each seen within the freshness
//! bound (the delays printed); a copy catching up answers within its lag
//! and switches to a new version whole; a zone over the limit stays on
//! today's path; a database outage leaves resident zones answering;
//! `/metrics` lists only the largest zones and sums the rest.
//!
//! ```text
//!  one database ─► server A (--resident-mb, packet cache off)
//!              └─► server B (residency off, packet cache off)
//!  questions ─► A and B ─► compare: the same bytes; A made no database read
//!  answers.rs   unsigned and signed zones answered the same
//!  writes.rs    writes seen within the bound; a lagging copy switches whole
//!  limits.rs    a zone over the limit; a database outage
//!  transfer.rs  an AXFR during a load waits and is sent from memory
//!  metrics.rs   /metrics: the largest zones listed, the rest summed
//! ```
//!
//! This file holds the zone, the servers and the comparisons every topic
//! shares.

mod answers;
mod limits;
mod metrics;
mod transfer;
mod writes;

use hickory_proto::op::{Message, ResponseCode};
use mongodns_testkit::*;
use std::process::Command;
use std::time::{Duration, Instant};

const APEX: &str = "res.test.";

/// The servers' `--freshness-ms`.
const FRESHNESS_MS: u64 = 100;

/// A write is answered within 1 s plus one poll interval.
const FRESHNESS_BOUND: Duration = Duration::from_millis(1000 + FRESHNESS_MS);

const DO: Option<(u16, bool)> = Some((4096, true));

/// Everything the answer path distinguishes, plus `hosts` generated names.
fn zone_text(hosts: usize) -> String {
    let mut z = String::from(
        "$ORIGIN res.test.\n$TTL 300\n\
         @ IN SOA ns1 admin 1 3600 600 86400 60\n\
         @ IN NS ns1\n@ IN NS ns2.elsewhere.example.\n@ IN MX 10 mail\n\
         ns1 IN A 192.0.2.1\nmail IN A 192.0.2.2\nmail IN AAAA 2001:db8::2\n\
         www IN A 192.0.2.80\nwww IN A 192.0.2.81\nweb IN CNAME www\n\
         chain IN CNAME web\nout IN CNAME www.elsewhere.example.\n\
         towild IN CNAME x.wild\n\
         *.wild IN A 192.0.2.99\n*.wild IN TXT \"synthesized\"\nhost.wild IN A 192.0.2.98\n\
         a.b.c IN TXT \"deep\"\n\
         sub IN NS ns.sub\nns.sub IN A 192.0.2.53\nsub IN DS 12345 13 2 0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF\n\
         open IN NS ns.elsewhere.example.\n\
         srv._tcp IN SRV 0 5 443 www\n\
         redir IN DNAME elsewhere.example.\n",
    );
    for i in 0..hosts {
        z.push_str(&format!("h{i} IN A 192.0.2.{}\n", i % 250 + 1));
        if i % 3 == 0 {
            z.push_str(&format!("h{i} IN AAAA 2001:db8::{:x}\n", i + 1));
        }
        if i % 7 == 0 {
            z.push_str(&format!("t.e{i} IN TXT \"under an empty non-terminal\"\n"));
        }
    }
    z
}

/// The questions both servers are asked.
fn questions(hosts: usize) -> Vec<(String, u16)> {
    let mut q: Vec<(String, u16)> = [
        ("res.test.", 6),
        ("res.test.", 2),
        ("res.test.", 15),
        ("res.test.", 1),
        ("res.test.", 255),
        ("res.test.", 48),
        ("www.res.test.", 1),
        ("www.res.test.", 28),
        ("WwW.Res.Test.", 1),
        ("web.res.test.", 1),
        ("chain.res.test.", 1),
        ("out.res.test.", 1),
        ("towild.res.test.", 1),
        ("anything.wild.res.test.", 1),
        ("anything.wild.res.test.", 16),
        ("anything.wild.res.test.", 28),
        ("deeper.x.wild.res.test.", 1),
        ("host.wild.res.test.", 1),
        ("host.wild.res.test.", 16),
        ("wild.res.test.", 1),
        ("c.res.test.", 16),
        ("b.c.res.test.", 1),
        ("a.b.c.res.test.", 16),
        ("z.a.b.c.res.test.", 16),
        ("sub.res.test.", 1),
        ("sub.res.test.", 43),
        ("sub.res.test.", 2),
        ("x.sub.res.test.", 1),
        ("ns.sub.res.test.", 1),
        ("open.res.test.", 43),
        ("y.open.res.test.", 28),
        ("srv._tcp.res.test.", 33),
        ("_tcp.res.test.", 33),
        ("x.redir.res.test.", 1),
        ("redir.res.test.", 39),
        ("nope.res.test.", 1),
        ("nope.res.test.", 43),
        ("mail.res.test.", 15),
        ("ns1.res.test.", 1),
    ]
    .iter()
    .map(|(n, t)| (n.to_string(), *t))
    .collect();
    for i in (0..hosts).step_by(5) {
        q.push((format!("h{i}.res.test."), 1));
        q.push((format!("h{i}.res.test."), 28));
        q.push((format!("h{i}x.res.test."), 1));
        q.push((format!("e{i}.res.test."), 16));
        q.push((format!("t.e{i}.res.test."), 16));
    }
    q
}

/// A server with the packet cache off (every answer runs the pipeline)
/// and a control port; `resident` adds a 64 MiB residency budget.
fn server(db: &TestZoneDb, resident: bool, extra: &[&str]) -> (ServerProcess, u16) {
    let freshness = FRESHNESS_MS.to_string();
    let mut args = vec![
        "--packet-cache-entries",
        "0",
        "--freshness-ms",
        freshness.as_str(),
    ];
    if resident {
        args.extend_from_slice(&["--resident-mb", "64"]);
    }
    args.extend_from_slice(extra);
    start_with_control(&db.name, &args)
}

/// `/metrics` lines naming `zone`.
fn zone_metrics(control: u16, zone: &str) -> Vec<String> {
    let (_, body) = http(control, "GET", "/metrics");
    let label = format!("zone=\"{zone}\"");
    body.lines()
        .filter(|l| l.starts_with("mongodns_resident_zone") && l.contains(&label))
        .map(str::to_string)
        .collect()
}

/// Waits until `/metrics` says `zone` is in `state` (and, for resident,
/// that its copy answers); returns how long that took. Fails after 30 s.
fn wait_residence(control: u16, zone: &str, state: &str) -> Duration {
    let started = Instant::now();
    let want = format!("mongodns_resident_zone{{zone=\"{zone}\",state=\"{state}\"}} 1");
    let current = format!("mongodns_resident_zone_current{{zone=\"{zone}\"}} 1");
    loop {
        let lines = zone_metrics(control, zone);
        let in_state = lines.contains(&want);
        if in_state && (state != "resident" || lines.contains(&current)) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{zone} not {state} after 30 s: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn raw(port: u16, qname: &str, qtype: u16, edns: Option<(u16, bool)>) -> Vec<u8> {
    tcp_exchange(port, &build_query(0x5151, qname, qtype, edns, false))
}

/// [`raw`] over UDP: where a resident server answers plain questions in
/// one step from the zone's bytes (pipeline/direct.rs).
fn raw_udp(port: u16, qname: &str, qtype: u16, edns: Option<(u16, bool)>) -> Vec<u8> {
    let query = build_query(0x5151, qname, qtype, edns, false);
    udp_exchange(port, &query, Duration::from_secs(5))
        .unwrap_or_else(|| panic!("{qname} {qtype}: no UDP reply"))
}

/// Asks every question of both servers over TCP and compares the replies
/// byte for byte; returns how many were compared.
fn compare(on: u16, off: u16, questions: &[(String, u16)], edns: Option<(u16, bool)>) -> usize {
    compare_by(raw, on, off, questions, edns)
}

/// [`compare`] over UDP: the resident server's plain questions are
/// answered in one step, the other server's by the general stages.
fn compare_udp(on: u16, off: u16, questions: &[(String, u16)], edns: Option<(u16, bool)>) -> usize {
    compare_by(raw_udp, on, off, questions, edns)
}

/// Asks one question of a server: port, name, type, EDNS (size, DO).
type Ask = fn(u16, &str, u16, Option<(u16, bool)>) -> Vec<u8>;

fn compare_by(
    ask: Ask,
    on: u16,
    off: u16,
    questions: &[(String, u16)],
    edns: Option<(u16, bool)>,
) -> usize {
    for (qname, qtype) in questions {
        let a = ask(on, qname, *qtype, edns);
        let b = ask(off, qname, *qtype, edns);
        assert!(!a.is_empty(), "{qname} {qtype}: no reply");
        let shown = |bytes: &[u8]| {
            Message::from_vec(bytes).map_or_else(|e| format!("unparsable: {e}"), |m| m.to_string())
        };
        assert_eq!(
            a,
            b,
            "{qname} {qtype} {edns:?}: resident and record-cache replies differ\nresident:\n{}\nrecord cache:\n{}",
            shown(&a),
            shown(&b)
        );
    }
    questions.len()
}

/// Asks every question of the resident server and checks that no database
/// read was made and that memory answered.
fn assert_no_reads(
    port: u16,
    control: u16,
    questions: &[(String, u16)],
    edns: Option<(u16, bool)>,
) {
    let (reads, lookups) = (
        stat(control, "db_queries"),
        stat(control, "resident_lookups"),
    );
    for (qname, qtype) in questions {
        let m = Message::from_vec(&raw(port, qname, *qtype, edns)).unwrap();
        assert_ne!(
            m.metadata.response_code,
            ResponseCode::ServFail,
            "{qname} {qtype}"
        );
    }
    assert_eq!(
        stat(control, "db_queries") - reads,
        0,
        "a resident zone read the database for {} questions",
        questions.len()
    );
    assert!(
        stat(control, "resident_lookups") - lookups >= questions.len() as u64,
        "the answers did not come from the resident copy"
    );
}

const HOSTS: usize = 300;

/// How a fixture's zone is secured: `mongodns-sign secure-zone` flags.
const NSEC: &[&str] = &[];
const NSEC3: &[&str] = &["--nsec3", "--salt", "abcd"];

/// Runs a workspace binary against `db` as an operator would.
fn operator(db: &TestZoneDb, bin: &str, args: &[&str]) {
    let mut cmd = Command::new(binary(bin));
    cmd.args(["--mongodb-uri", &database_uri(), "--database", &db.name])
        .args(args);
    let out = run_bounded(cmd, bin, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{bin} {args:?} failed: {stderr}");
}

fn a_of(port: u16, name: &str) -> Vec<String> {
    lines(&ask_udp(port, name, 1, None).answers)
}
