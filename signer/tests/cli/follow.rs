//! Other writers beside a signer: `resign --follow` signs what a writer
//! that knows nothing of DNSSEC adds and deletes, and record edits that keep
//! their signer (the chain read once) follow another process's edits, even
//! change-sets too large to list; `dnssec-verify` accepts the zone each time.
//!
//! ```text
//!  secured example.net. ─► resign --follow (a child; Reaper kills it)
//!     unsigned writes ─► serial moves ─► export ─► dnssec-verify
//!  edits, process A (kept signer) ∥ edits, process B ─► A reads B's names
//!     from its change records ─► export ─► dnssec-verify
//! ```

use super::*;

/// Waits (up to 30 s) until the zone's SOA serial is above `above`.
fn wait_for_serial_above(db: &Db, above: u32) -> u32 {
    let zone: Name = "example.net.".parse().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let serial = runtime()
            .block_on(db.store.find_zone(&zone))
            .unwrap()
            .unwrap()
            .serial;
        if serial > above {
            return serial;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "resign --follow did not publish in 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A database whose `example.net.` is secured (NSEC3 with `nsec3`).
fn secured_example_net(tag: &str, nsec3: bool) -> (Db, Name) {
    let db = Db::new(tag);
    let mut secure = vec!["secure-zone", "example.net"];
    if nsec3 {
        secure.push("--nsec3");
    }
    db.ok(&secure);
    (db, "example.net.".parse().unwrap())
}

/// Kills the process of this id when dropped: a failed test leaves no
/// follower running.
struct Reaper(u32);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// What `child` writes to stderr, gathered as it comes by a thread (join
/// it for the rest once the child is gone).
type Gathered = std::sync::Arc<std::sync::Mutex<String>>;

fn follow_log(child: &mut std::process::Child) -> (Gathered, std::thread::JoinHandle<()>) {
    use std::io::Read;
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut stderr = child.stderr.take().expect("stderr piped");
    let sink = log.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (log, reader)
}

/// `resign --follow` signs what a writer that knows nothing of DNSSEC adds
/// and deletes, and `dnssec-verify` accepts the zone after each.
fn follow_keeps_the_zone_valid(tag: &str, nsec3: bool) {
    let (db, zone) = secured_example_net(tag, nsec3);
    let mut follower = Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
        .args([
            "--mongodb-uri",
            &database_uri(),
            "--database",
            &db.name,
            "-q",
            "resign",
            "example.net",
            "--follow",
            "--interval",
            "0.1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _reaper = Reaper(follower.id());
    let (log, reader) = follow_log(&mut follower);
    // Its first (full) pass ends before anything is written: a write during
    // it may be published by that pass before the follower signs it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !log.lock().unwrap().contains("nodes read") {
        assert!(
            std::time::Instant::now() < deadline,
            "no first pass within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let a = |owner: &str, ip: [u8; 4]| NodeWrite {
        name: owner.parse().unwrap(),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 3600,
            rdata: vec![Box::new(ip)],
        }],
    };
    let nodes = [
        a("a.example.net.", [192, 0, 2, 10]),
        NodeWrite {
            name: "sub.example.net.".parse().unwrap(),
            rrsets: Vec::new(),
        },
        a("b.sub.example.net.", [192, 0, 2, 11]),
        a("ns1.example.net.", [192, 0, 2, 12]),
    ];
    let written = runtime()
        .block_on(backend_mongo::testing::merge_as_foreign_writer(
            &db.store, &zone, &nodes,
        ))
        .unwrap()
        .serial;
    let serial = wait_for_serial_above(&db, written);
    let export = db.ok(&["export-zone", "example.net"]);
    assert!(export.contains("b.sub.example.net."), "{export}");
    verify(&export, "example.net", false);
    // Deleted the way a program writing to MongoDB directly would.
    let deleted = runtime().block_on(backend_mongo::testing::delete_nodes_as_foreign_writer(
        &db.store,
        &zone,
        &["a.example.net.".parse().unwrap()],
    ));
    assert_eq!(deleted.unwrap(), 1);
    wait_for_serial_above(&db, serial);
    let export = db.ok(&["export-zone", "example.net"]);
    assert!(!export.contains("\na.example.net."), "{export}");
    verify(&export, "example.net", false);
    follower.kill().unwrap();
    follower.wait().unwrap();
    reader.join().unwrap();
    let log = log.lock().unwrap().clone();
    // Two incremental passes, each reading only the names written.
    assert!(
        log.contains(", 4 nodes read") || log.contains(", 5 nodes read"),
        "{log}"
    );
    assert!(log.contains(", 1 nodes read"), "{log}");
    db.drop_db();
}

#[test]
fn follow_keeps_the_zone_valid_nsec() {
    follow_keeps_the_zone_valid("signcli_follow", false);
}

#[test]
fn follow_keeps_the_zone_valid_nsec3() {
    follow_keeps_the_zone_valid("signcli_follow3", true);
}

/// Record edits of one process keep their signer (the chain read once)
/// while another process edits the same secured zone between them: the
/// names the other one changed are read again from its change records, so
/// every edit links into the chain as stored and `dnssec-verify` accepts
/// the zone. A kept chain that missed them drops the other's names.
fn kept_signer_follows_other_writers(tag: &str, nsec3: bool) {
    let (db, zone) = secured_example_net(tag, nsec3);
    let before = signer::kept_signer::taken_in(&db.store, &zone);
    let add_here = |owner: &str| {
        let edit = dns::edit::RecordEdit::Add {
            name: owner.parse().unwrap(),
            rrset: RRset {
                rtype: RType::A,
                ttl: 3600,
                rdata: vec![Box::new([192, 0, 2, 1])],
            },
        };
        block_on(signer::edit::edit_zone(&db.store, &zone, &[edit])).unwrap();
    };
    let other = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_mongodns-zone"))
            .args(["--mongodb-uri", &database_uri(), "--database", &db.name])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "mongodns-zone {args:?}: {}", stderr(&o));
    };
    for i in 0..8 {
        add_here(&format!("n{i}a.example.net."));
        other(&[
            "add-record",
            "example.net",
            &format!("n{i}b"),
            "A",
            "192.0.2.2",
        ]);
        if i % 3 == 2 {
            other(&["delete-name", "example.net", &format!("n{}a", i - 1)]);
        }
    }
    add_here("n9a.example.net.");
    assert!(
        signer::kept_signer::taken_in(&db.store, &zone) > before,
        "no edit took up the signer kept by the one before"
    );
    let export = db.ok(&["export-zone", "example.net"]);
    for i in 0..8 {
        assert!(export.contains(&format!("n{i}b.example.net.")), "{export}");
    }
    verify(&export, "example.net", false);
    db.drop_db();
}

#[test]
fn kept_signer_follows_other_writers_nsec() {
    kept_signer_follows_other_writers("signcli_kept", false);
}

/// Change-sets so large that their own change record says "all" (more
/// names than a record lists) still keep their signer: the next one takes
/// it up instead of reading the chain again.
#[test]
fn kept_signer_outlives_change_sets_too_large_to_list() {
    let (db, zone) = secured_example_net("signcli_keptbig", false);
    let edits = |round: usize| -> Vec<dns::edit::RecordEdit> {
        (0..2100)
            .map(|i| dns::edit::RecordEdit::Add {
                name: format!("b{round}-{i}.example.net.").parse().unwrap(),
                rrset: RRset {
                    rtype: RType::A,
                    ttl: 3600,
                    rdata: vec![Box::new([192, 0, 2, 3])],
                },
            })
            .collect()
    };
    block_on(signer::edit::edit_zone(&db.store, &zone, &edits(0))).unwrap();
    let before = signer::kept_signer::taken_in(&db.store, &zone);
    block_on(signer::edit::edit_zone(&db.store, &zone, &edits(1))).unwrap();
    assert!(
        signer::kept_signer::taken_in(&db.store, &zone) > before,
        "the second large change-set read the chain again"
    );
    let export = db.ok(&["export-zone", "example.net"]);
    verify(&export, "example.net", false);
    db.drop_db();
}

#[test]
fn kept_signer_follows_other_writers_nsec3() {
    kept_signer_follows_other_writers("signcli_kept3", true);
}
