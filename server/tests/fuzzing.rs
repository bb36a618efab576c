//! Fuzzing on the stable toolchain: corpus replay (always) and a bounded,
//! coverage-free mutation run (docs/reliability.md, "Fuzzing").
//!
//! ```text
//!  tests/fuzz/{query,zonefile,packet_key,signed,tsig}/*   replayed: every file must pass
//!  then, per target, FUZZ_SECS seconds (default 2) of mutations of the corpus,
//!  longer (at most HARD_CAP) until the target judged its floor of inputs
//!  (fuzz/judged.rs), short of which the test fails;
//!  an input whose reply signature is new joins the in-memory corpus
//!  (and is written to FUZZ_SAVE/<target>/ when that is set);
//!  a failing input is written to target/fuzz-failures/ and fails the test
//!  hostile zone data: random storable nodes written to the real database,
//!  every owner asked of the real server (a reply or SERVFAIL, never a panic)
//! ```
//!
//! Longer runs: `FUZZ_SECS=300 FUZZ_SAVE=$PWD/tests/fuzz cargo test --release
//! -p mongodns-server --test fuzzing -- --nocapture`.

use mongodns_testkit::{self as common, ZoneImport};
mod fuzz;

use fuzz::judged::{self, Judged};
use fuzz::*;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

fn read_input(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "hex") {
        unhex(&String::from_utf8_lossy(&bytes))
    } else {
        bytes
    }
}

type Check = fn(&[u8]) -> u64;

fn replay(target: &str, check: Check) -> Vec<Vec<u8>> {
    let files = corpus_files(&root(), target);
    assert!(!files.is_empty(), "the {target} corpus is empty");
    let mut inputs = Vec::new();
    for file in files {
        let input = read_input(&file);
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            panic!("{target}: corpus file {} fails", file.display());
        }
        inputs.push(input);
    }
    inputs
}

/// A target's floor of work: inputs it must judge (count `kind`) in the
/// mutation run. The run goes on past `FUZZ_SECS` until the floor is met,
/// at most [`HARD_CAP`]; short of it then, the test fails.
struct Floor {
    kind: Judged,
    min: u64,
}

/// The longest a mutation run goes on to meet its floor.
const HARD_CAP: Duration = Duration::from_secs(60);

fn fuzz_for(target: &str, check: Check, floor: Floor, mut corpus: Vec<Vec<u8>>, max_len: usize) {
    let secs: f64 = std::env::var("FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let seed = seed_from_env();
    let save = std::env::var_os("FUZZ_SAVE").map(|d| PathBuf::from(d).join(target));
    let mut rng = Rng(seed);
    let mut seen: HashSet<u64> = HashSet::new();
    for input in &corpus {
        seen.insert(check(input));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let cap = started + HARD_CAP.max(Duration::from_secs_f64(secs));
    let judged_before = judged::so_far(floor.kind);
    let judged = || judged::so_far(floor.kind) - judged_before;
    let mut runs = 0u64;
    let mut added = 0;
    while Instant::now() < deadline || (judged() < floor.min && Instant::now() < cap) {
        for _ in 0..64 {
            let base = &corpus[rng.below(corpus.len())];
            let other = &corpus[rng.below(corpus.len())];
            let input = mutate(&mut rng, base, other, max_len);
            runs += 1;
            match catch_unwind(AssertUnwindSafe(|| check(&input))) {
                Ok(sig) => {
                    if seen.insert(sig) && corpus.len() < 4096 {
                        // At most 200 new files a run: the corpus stays small.
                        if let Some(dir) = save.as_ref().filter(|_| added < 200) {
                            std::fs::create_dir_all(dir).unwrap();
                            let name = format!("{:016x}.hex", sig);
                            std::fs::write(dir.join(name), hex(&input) + "\n").unwrap();
                        }
                        corpus.push(input);
                        added += 1;
                    }
                }
                Err(_) => {
                    let dir = root().join("target/fuzz-failures").join(target);
                    std::fs::create_dir_all(&dir).unwrap();
                    let file = dir.join(format!("{seed}-{runs}.hex"));
                    std::fs::write(&file, hex(&input) + "\n").unwrap();
                    panic!(
                        "{target}: input {} fails (seed {seed}, run {runs}); saved to {}",
                        hex(&input),
                        file.display()
                    );
                }
            }
        }
    }
    let took = started.elapsed().as_secs_f64();
    eprintln!(
        "fuzz {target}: {runs} runs, {} judged ({:?}) in {took:.1} s ({:.0} runs/s), seed {seed}, \
         {added} new signatures, corpus {}",
        judged(),
        floor.kind,
        runs as f64 / took,
        corpus.len()
    );
    assert!(
        judged() >= floor.min,
        "{target}: only {} inputs judged ({:?}) in {took:.1} s, at least {} required (seed {seed})",
        judged(),
        floor.kind,
        floor.min
    );
}

// Floors of inputs judged per mutation run (docs/reliability.md,
// "Fuzzing"): about a tenth of what a 2-s debug run judged on the 2-core
// machine at load average 9.5 (2026-12-06: query 6,742, zonefile 31,616,
// packet_key 23,385, signed 240 DNSSEC replies of 6,016 runs, tsig 5,231),
// so a slow run meets them well within the hard cap.
const MIN_QUERY: u64 = 600;
const MIN_ZONEFILE: u64 = 3000;
const MIN_PACKET_KEY: u64 = 2000;
const MIN_SIGNED: u64 = 25;
const MIN_TSIG: u64 = 500;

fn floor(kind: Judged, min: u64) -> Floor {
    Floor { kind, min }
}

#[test]
fn query_path_corpus_and_mutations() {
    let corpus = replay("query", query_path);
    // The hand-made hostile packets are query-path inputs too.
    let mut all = corpus;
    for file in corpus_files(&root(), "hostile") {
        let input = read_input(&file);
        if catch_unwind(AssertUnwindSafe(|| query_path(&input))).is_err() {
            panic!("hostile packet {} fails the query path", file.display());
        }
        all.push(input);
    }
    fuzz_for(
        "query",
        query_path,
        floor(Judged::Reply, MIN_QUERY),
        all,
        1400,
    );
}

/// The corpus of `target` replayed, then mutated with its floor.
fn replay_then_fuzz(target: &str, check: Check, floor: Floor, max_len: usize) {
    let corpus = replay(target, check);
    fuzz_for(target, check, floor, corpus, max_len);
}

#[test]
fn zonefile_corpus_and_mutations() {
    replay_then_fuzz(
        "zonefile",
        zonefile,
        floor(Judged::ZoneFile, MIN_ZONEFILE),
        4096,
    );
}

#[test]
fn packet_key_corpus_and_mutations() {
    replay_then_fuzz(
        "packet_key",
        packet_key,
        floor(Judged::PacketKey, MIN_PACKET_KEY),
        600,
    );
}

#[test]
fn signed_zone_corpus_and_mutations() {
    let check = fuzz::signed::signed_query;
    replay_then_fuzz("signed", check, floor(Judged::Dnssec, MIN_SIGNED), 600);
}

#[test]
fn tsig_corpus_and_mutations() {
    let check = fuzz::tsig::tsig_query;
    replay_then_fuzz("tsig", check, floor(Judged::Tsig, MIN_TSIG), 600);
}

/// Random storable nodes written straight into the database and read back
/// by the real server: every question gets a reply that parses, and the
/// server keeps running.
#[test]
fn hostile_zone_data_read_back_by_the_server() {
    let seed = seed_from_env();
    let mut rng = Rng(seed);
    let rounds: usize = std::env::var("FUZZ_DATA_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let mut answered = [0usize; 4];
    for round in 0..rounds {
        let (db, nodes) = common::block_on(hostile_db(&mut rng, round));
        let server = common::ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.0/8"]);
        for (name, sets) in &nodes {
            let mut qtypes: Vec<u16> = sets.iter().map(|s| s.rtype.0).collect();
            qtypes.extend([1, 255]);
            for (i, qtype) in qtypes.iter().enumerate() {
                let edns = (i % 2 == 0).then_some((1232, true));
                let q = common::build_query(i as u16, &name.to_string(), *qtype, edns, false);
                let reply = common::udp_exchange(server.port, &q, Duration::from_secs(5))
                    .unwrap_or_else(|| panic!("seed {seed}: no reply to {name} type {qtype}"));
                answered[rcode_slot(&q, &reply, seed)] += 1;
            }
            let q = common::build_query(9, &format!("below.{name}"), 16, None, false);
            answered[rcode_slot(&q, &common::tcp_exchange(server.port, &q), seed)] += 1;
        }
        let axfr = common::build_query(7, "hd.test.", 252, None, false);
        let first = common::tcp_exchange(server.port, &axfr);
        rcode_slot(&axfr, &first, seed);
        assert!(
            std::path::Path::new(&format!("/proc/{}", server.pid())).exists(),
            "seed {seed}: the server is still running"
        );
        drop(server);
        common::block_on(db.drop_db());
    }
    eprintln!("hostile zone data, seed {seed}: NOERROR/NXDOMAIN/SERVFAIL/other {answered:?}");
    assert!(
        answered[2] > 0,
        "some malformed data was read back: {answered:?}"
    );
    assert!(answered[0] > 0, "some good data was served: {answered:?}");
}

/// 0 NOERROR, 1 NXDOMAIN, 2 SERVFAIL, 3 anything else; checks the reply:
/// hickory-proto reads it, or (hickory checks the contents of some types,
/// such as a DNSKEY's public key, which stored data may not satisfy) its
/// every record is well framed.
fn rcode_slot(query: &[u8], reply: &[u8], seed: u64) -> usize {
    if let Err(e) = hickory_proto::op::Message::from_vec(reply) {
        assert!(
            well_framed(reply),
            "seed {seed}: reply {} does not parse: {e}",
            hex(reply)
        );
    }
    assert_eq!(&reply[..2], &query[..2], "seed {seed}: ID not echoed");
    assert!(reply[2] & 0x80 != 0, "seed {seed}: QR not set");
    match reply[3] & 0x0F {
        0 => 0,
        3 => 1,
        2 => 2,
        _ => 3,
    }
}

/// The header's counts match the records that follow, each with a name
/// that reads, and nothing is left over.
fn well_framed(msg: &[u8]) -> bool {
    use mongodns_server::wire::read_name;
    let count = |at: usize| {
        msg.get(at..at + 2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    };
    let (Some(qd), Some(an), Some(ns), Some(ar)) = (count(4), count(6), count(8), count(10)) else {
        return false;
    };
    let mut pos = 12;
    for _ in 0..qd {
        let Some((_, end)) = read_name(msg, pos) else {
            return false;
        };
        pos = end + 4;
    }
    for _ in 0..an + ns + ar {
        let Some((_, end)) = read_name(msg, pos) else {
            return false;
        };
        let Some(rdlen) = count(end + 8) else {
            return false;
        };
        pos = end + 10 + rdlen;
    }
    pos == msg.len()
}

/// A database holding `hd.test.` and 40 random nodes written straight into it.
async fn hostile_db(
    rng: &mut Rng,
    round: usize,
) -> (common::TestZoneDb, Vec<(dns::Name, Vec<dns::RRset>)>) {
    use backend_mongo::schema::{binary, node_doc, NODES};
    let db = common::TestZoneDb::new(&format!("hostile_data{round}")).await;
    let base = "$ORIGIN hd.test.\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.1\n";
    db.import("hd.test.", base, false).await;
    let apex: dns::Name = "hd.test.".parse().unwrap();
    let zone = db.store.find_zone(&apex).await.unwrap().unwrap();
    let nodes = fuzz::hostile_data::random_nodes(rng, &apex, 40);
    let collection = db
        .store
        .database()
        .collection::<mongodb::bson::Document>(NODES);
    for (name, sets) in &nodes {
        let mut doc = node_doc(&apex, zone.ver, name, sets);
        let rrsets = doc.get_document_mut("rrsets").unwrap();
        for (_, set) in rrsets.iter_mut() {
            if let Some(sigs) = fuzz::hostile_data::random_sigs(rng) {
                let sigs: Vec<_> = sigs.iter().map(|s| binary(s)).collect();
                set.as_document_mut().unwrap().insert("sigs", sigs);
            }
        }
        let filter = mongodb::bson::doc! {"_id": doc.get_str("_id").unwrap()};
        collection
            .replace_one(filter, doc)
            .upsert(true)
            .await
            .unwrap();
    }
    (db, nodes)
}

fn seed_from_env() -> u64 {
    std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

/// The check itself can fail: a reply that does not parse is caught.
#[test]
fn the_reply_check_rejects_garbage() {
    let query = [0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
    let garbage = [0x12, 0x34, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0];
    let bad =
        catch_unwind(|| check_reply(&query, &garbage, mongodns_server::handler::Transport::Udp));
    assert!(bad.is_err());
    let wrong_id = catch_unwind(|| {
        let mut reply = query.to_vec();
        reply[0] = 0;
        reply[2] |= 0x80;
        check_reply(&query, &reply, mongodns_server::handler::Transport::Udp)
    });
    assert!(wrong_id.is_err());
}
