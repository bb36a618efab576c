//! Integration tests of the load tools against a real database and real
//! sockets.
//!
//! ```text
//!  resume:   mongodns-import (binary) killed midway ─► re-run ─► content equals
//!            a clean import in another database, node for node
//!  sections: a directory of zone files imports as the same multi-zone file;
//!            a bad `$ZONE` input is refused with its file and line, nothing
//!            written; --baseline inserts every record and leaves nothing
//!  zonegen:  the binary's output is the library's, byte for byte, per seed
//!  perf:     a UDP responder that drops every 10th query ─► exact counts;
//!            TCP to a closed port ─► the run ends, every query lost
//! ```

use backend_mongo::Store;

use dns::{Name, Node};
use loadtools::zonegen::{BigZone, SmallZones};
use mongodns_testkit::{block_on, database_uri, free_tcp_port, run_bounded, unique_name};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn db_name(tag: &str) -> String {
    unique_name(&format!("lt_{tag}"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mdt_lt_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn import_cmd(uri: &str, db: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mongodns-import"));
    c.args(["--mongodb-uri", uri, "--database", db]).args(args);
    c
}

/// Every node of every served zone, as comparable text, with one read of
/// each collection (a `{zone, ver}` query per zone is a full scan on FerretDB).
async fn dump(store: &Store, zones: &[Name]) -> Vec<String> {
    use futures::TryStreamExt;
    use mongodb::bson::{doc, Document};
    let db = store.database();
    let served: std::collections::HashMap<String, i64> = db
        .collection::<Document>("zones")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|d| Some((d.get_str("_id").ok()?.to_string(), d.get_i64("ver").ok()?)))
        .collect();
    let mut nodes: Vec<Document> = db
        .collection::<Document>("nodes")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    nodes.retain(|d| {
        let zone = d.get_str("zone").unwrap_or_default();
        served.get(zone) == d.get_i64("ver").ok().as_ref()
    });
    nodes.sort_by(|a, b| {
        (a.get_str("zone").unwrap(), a.get_str("ck").unwrap())
            .cmp(&(b.get_str("zone").unwrap(), b.get_str("ck").unwrap()))
    });
    let mut out = Vec::new();
    for z in zones {
        assert!(served.contains_key(&z.to_string()), "zone {z} not served");
    }
    for d in &nodes {
        out.push(node_line(&backend_mongo::schema::node_from_doc(d).unwrap()));
    }
    out
}

/// A node as comparable text: its name, then its RRsets sorted, each
/// with its rdata sorted.
fn node_line(node: &Node) -> String {
    let mut sets: Vec<String> = node
        .rrsets
        .iter()
        .map(|r| {
            let mut rd: Vec<&[u8]> = r.rdata.iter().map(|b| &b[..]).collect();
            rd.sort();
            format!("{} {} {:?}", r.rtype, r.ttl, rd)
        })
        .collect();
    sets.sort();
    format!("{} {}", node.name, sets.join(" | "))
}

/// Like [`dump`], through the server's own read path (one zone).
async fn dump_zone(store: &Store, zones: &[Name]) -> Vec<String> {
    let mut out = Vec::new();
    for z in zones {
        let info = store
            .find_zone(z)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("zone {z} not served"));
        out.push(format!("zone {z} serial {}", info.serial));
        for node in store.zone_nodes(&info).await.unwrap() {
            out.push(node_line(&node));
        }
    }
    out
}

/// Runs `args` slowly (--rate), kills it once it has written something,
/// then runs it again to completion; returns the re-run's stdout.
fn kill_midway_then_rerun(uri: &str, db: &str, args: &[&str], rate: &str) -> String {
    let mut slow: Vec<&str> = args.to_vec();
    slow.extend(["--rate", rate]);
    let mut child = import_cmd(uri, db, &slow)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the slow import finished before it could be killed"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let out = import_cmd(uri, db, args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "re-run failed: {stderr}");
    // The driver is shut down before the runtime ends (`Store::shutdown`):
    // no panic backtrace after a successful run.
    assert!(
        !stderr.contains("panicked"),
        "import panicked at exit: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The number of records an import's summary line says were stored by an
/// earlier run: the first word after `marker`.
fn resume_count(out: &str, marker: &str) -> u64 {
    out.split(marker)
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no resume count in {out:?}"))
}

/// Stores on the databases of a killed-and-resumed import and a clean one.
async fn connect_pair(uri: &str, killed: &str, clean: &str) -> (Store, Store) {
    let connect = |db| Store::connect(uri, db, Duration::from_secs(10));
    (
        connect(killed).await.unwrap(),
        connect(clean).await.unwrap(),
    )
}

#[test]
fn killed_single_zone_import_resumes_to_the_same_content() {
    let uri = database_uri();
    let file = tmp("resume-big.zone");
    BigZone::new("example.com.", 11, 3000)
        .write_file(&file)
        .unwrap();
    let f = file.to_str().unwrap();
    let (killed, clean) = (db_name("killed"), db_name("clean"));
    let args = ["--zone", "example.com.", "--batch-size", "50", f];
    let out = kill_midway_then_rerun(&uri, &killed, &args, "400");
    // It resumed: it found records stored by the killed run.
    assert!(resume_count(&out, "; ") > 0, "nothing was resumed: {out}");
    let c = import_cmd(&uri, &clean, &args).output().unwrap();
    assert!(c.status.success());
    block_on(async {
        let (a, b) = connect_pair(&uri, &killed, &clean).await;
        let zones = ["example.com.".parse::<Name>().unwrap()];
        let (da, db) = (dump(&a, &zones).await, dump(&b, &zones).await);
        assert!(da.len() > 1500, "{}", da.len());
        assert_eq!(da, db, "a resumed import differs from a clean one");
        assert_eq!(dump_zone(&a, &zones).await, dump_zone(&b, &zones).await);
        // No leftover of the killed run: one version only.
        let nodes = a
            .database()
            .collection::<mongodb::bson::Document>("nodes")
            .count_documents(mongodb::bson::doc! {})
            .await
            .unwrap();
        assert_eq!(nodes as usize, da.len());
        let _ = a.database().drop().await;
        let _ = b.database().drop().await;
    });
}

#[test]
fn killed_multi_zone_import_resumes_to_the_same_content() {
    let uri = database_uri();
    let file = tmp("resume-small.zones");
    let small = SmallZones::new(5, 400, "test.");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    small.write_multi(&mut out).unwrap();
    drop(out);
    let f = file.to_str().unwrap();
    let (killed, clean) = (db_name("mkilled"), db_name("mclean"));
    let args = ["--batch-size", "40", f];
    let out = kill_midway_then_rerun(&uri, &killed, &args, "300");
    assert!(out.contains("in 400 zones"), "{out}");
    assert!(
        resume_count(&out, "zones (") > 0,
        "nothing was resumed: {out}"
    );
    let c = import_cmd(&uri, &clean, &args).output().unwrap();
    assert!(c.status.success());
    block_on(async {
        let (a, b) = connect_pair(&uri, &killed, &clean).await;
        let zones: Vec<Name> = (0..400).map(|j| small.apex(j).parse().unwrap()).collect();
        let (da, db) = (dump(&a, &zones).await, dump(&b, &zones).await);
        // Serials may differ (a zone stored by the killed run after its last
        // checkpoint is merged again: same records, serial + 1); nothing else may.
        let strip = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .filter(|l| !l.starts_with("zone "))
                .map(|l| {
                    l.split(" | ")
                        .filter(|set| !set.starts_with("SOA "))
                        .collect::<Vec<_>>()
                        .join(" | ")
                })
                .collect()
        };
        assert_eq!(strip(da), strip(db));
        let _ = a.database().drop().await;
        let _ = b.database().drop().await;
    });
}

/// The zones of a multi-zone file as (apex, text) pairs, cut at `$ZONE`.
fn split_multi(text: &str) -> Vec<(String, String)> {
    let mut zones: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("$ZONE ") {
            Some(apex) => zones.push((apex.trim().to_string(), String::new())),
            None => {
                if let Some((_, body)) = zones.last_mut() {
                    body.push_str(line);
                    body.push('\n');
                }
            }
        }
    }
    zones
}

/// Runs `mongodns-import`, which must succeed; returns what it printed.
fn import_ok(uri: &str, db: &str, args: &[&str]) -> String {
    let out = import_cmd(uri, db, args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mongodns-import {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Node documents in a database (every collection named `nodes*`).
async fn node_count(store: &Store) -> u64 {
    let db = store.database();
    let mut total = 0;
    for name in db.list_collection_names().await.unwrap() {
        if name.starts_with("nodes") {
            total += db
                .collection::<mongodb::bson::Document>(&name)
                .count_documents(mongodb::bson::doc! {})
                .await
                .unwrap();
        }
    }
    total
}

#[test]
fn a_directory_imports_as_its_multi_zone_file_and_bad_sections_write_nothing() {
    let uri = database_uri();
    let small = SmallZones::new(7, 30, "test.");
    let mut text = Vec::new();
    small.write_multi(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let multi = tmp("sections.zones");
    std::fs::write(&multi, &text).unwrap();
    // The same zones, one file each: `<apex>zone` and `<apex>` alternately.
    let dir = tmp("sections-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let zones = split_multi(&text);
    assert_eq!(zones.len(), 30);
    for (i, (apex, body)) in zones.iter().enumerate() {
        let file = match i % 2 {
            0 => format!("{apex}zone"),
            _ => apex.trim_end_matches('.').to_string(),
        };
        std::fs::write(dir.join(file), body).unwrap();
    }
    let (from_file, from_dir) = (db_name("sfile"), db_name("sdir"));
    let mut imported = Vec::new();
    for (db, input) in [(&from_file, &multi), (&from_dir, &dir)] {
        let stdout = import_ok(&uri, db, &[input.to_str().unwrap()]);
        assert!(stdout.contains("in 30 zones"), "{stdout}");
        imported.push(resume_count(&stdout, "imported "));
    }
    assert_eq!(
        imported[0], imported[1],
        "records read from the file and the directory"
    );
    // Refused inputs: the file and line named, nothing written.
    let bad_name = tmp("bad-name.zones");
    std::fs::write(&bad_name, format!("$ZONE a.test.\n{}\n$ZONE\n", zones[0].1)).unwrap();
    let no_zone = tmp("no-zone.zones");
    std::fs::write(&no_zone, format!("; a comment\n{}", zones[0].1)).unwrap();
    let refused = db_name("srefused");
    for (input, want) in [
        (&bad_name, "$ZONE needs a zone name"),
        (&no_zone, "must start with a $ZONE line"),
    ] {
        let out = import_cmd(&uri, &refused, &[input.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{input:?} was accepted");
        assert!(stderr.contains(want), "{stderr}");
        assert!(
            stderr.contains(input.file_name().unwrap().to_str().unwrap()),
            "{stderr}"
        );
    }
    let baseline = db_name("sbaseline");
    let stdout = import_ok(&uri, &baseline, &["--baseline", multi.to_str().unwrap()]);
    let records = imported[0];
    assert!(
        stdout.contains(&format!("baseline: {records} records")),
        "{records}: {stdout}"
    );
    block_on(async {
        let connect = |db| Store::connect(&uri, db, Duration::from_secs(10));
        let (a, b) = (
            connect(&from_file).await.unwrap(),
            connect(&from_dir).await.unwrap(),
        );
        let apexes: Vec<Name> = zones
            .iter()
            .map(|(apex, _)| apex.parse().unwrap())
            .collect();
        let (da, db) = (dump(&a, &apexes).await, dump(&b, &apexes).await);
        assert!(da.len() > 60, "{}", da.len());
        assert_eq!(da, db, "the directory's import differs from the file's");
        let r = connect(&refused).await.unwrap();
        assert_eq!(node_count(&r).await, 0, "a refused input wrote nodes");
        let c = connect(&baseline).await.unwrap();
        assert_eq!(node_count(&c).await, 0, "--baseline left its collection");
        for s in [a, b, r, c] {
            let _ = s.database().drop().await;
        }
    });
}

#[test]
fn zonegen_binary_is_deterministic() {
    let run = |seed: &str| {
        Command::new(env!("CARGO_BIN_EXE_mongodns-zonegen"))
            .args(["big", "-n", "5000", "--seed", seed])
            .output()
            .unwrap()
            .stdout
    };
    let (a, b, c) = (run("1"), run("1"), run("2"));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut lib = Vec::new();
    BigZone::new("example.com.", 1, 5000)
        .write(&mut lib)
        .unwrap();
    assert_eq!(a, lib);
}

#[test]
fn perf_counts_exactly_the_replies() {
    // A responder that answers every query except every 10th it receives.
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sock.local_addr().unwrap().port();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let responder = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        let mut n = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            let Ok((len, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            n += 1;
            if n.is_multiple_of(10) {
                continue;
            }
            let mut reply = buf[..len].to_vec();
            reply[2] |= 0x80;
            reply[3] = if n.is_multiple_of(3) { 3 } else { 0 };
            sock.send_to(&reply, from).unwrap();
        }
    });
    let queries = tmp("perf-queries.txt");
    let text: String = (0..1000).map(|i| format!("n{i}.example.com A\n")).collect();
    std::fs::write(&queries, text).unwrap();
    let mut perf = Command::new(env!("CARGO_BIN_EXE_mongodns-perf"));
    perf.args([
        "-s",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-c",
        "3",
        "-q",
        "30",
    ])
    .args(["-t", "0.5", "--json", "-d", queries.to_str().unwrap()]);
    let out = run_bounded(perf, "1000 queries, 100 lost", Duration::from_secs(120));
    stop.store(true, Ordering::Relaxed);
    responder.join().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["queries_sent"], 1000);
    assert_eq!(v["queries_completed"], 900);
    assert_eq!(v["queries_lost"], 100);
    let noerror = v["response_codes"]["NOERROR"].as_u64().unwrap();
    let nxdomain = v["response_codes"]["NXDOMAIN"].as_u64().unwrap();
    assert_eq!(noerror + nxdomain, 900);
    assert_eq!(
        nxdomain,
        (1..=1000u64)
            .filter(|n| !n.is_multiple_of(10) && n.is_multiple_of(3))
            .count() as u64
    );
}

#[test]
fn perf_over_tcp_to_a_closed_port_ends_and_counts_every_query_lost() {
    // A port nothing listens on (bound, then closed): every connect is refused.
    let port = free_tcp_port();
    let queries = tmp("perf-tcp-queries.txt");
    let text: String = (0..20).map(|i| format!("n{i}.example.com A\n")).collect();
    std::fs::write(&queries, text).unwrap();
    let mut perf = Command::new(env!("CARGO_BIN_EXE_mongodns-perf"));
    perf.args(["-s", "127.0.0.1", "-p", &port.to_string(), "-c", "2"])
        .args([
            "--tcp",
            "-t",
            "0.5",
            "--json",
            "-d",
            queries.to_str().unwrap(),
        ]);
    // It used to retry the connection for ever: a one-pass run never ended.
    let out = run_bounded(perf, "20 TCP queries refused", Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["queries_sent"], 20);
    assert_eq!(v["queries_completed"], 0);
    assert_eq!(v["queries_lost"], 20);
}
