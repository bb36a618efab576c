//! The `mongodns-sign` binary against a real database: error messages and
//! exit status, key rollovers, private keys never printed, old versions
//! left for cleanup and collected, and progress reports.

use backend_mongo::testing::{block_on, database_uri, example_net, runtime, unique_name, TestDb};
use backend_mongo::{Name, NodeWrite, RRset, RType, WriteMode};
use std::ops::Deref;
use std::process::{Command, Output};
use std::time::Duration;

/// A test database holding the small zone `example.net.`, and
/// mongodns-sign run against it.
struct Db(TestDb);

impl Deref for Db {
    type Target = TestDb;

    fn deref(&self) -> &TestDb {
        &self.0
    }
}

impl Db {
    /// A fresh database holding a small zone `example.net.`.
    fn new(tag: &str) -> Db {
        block_on(async {
            let db = TestDb::new(tag).await;
            let (zone, nodes) = example_net();
            db.write_zone(&zone, &nodes).await;
            Db(db)
        })
    }

    /// Runs mongodns-sign; whatever the outcome, it must not panic (the
    /// driver did at exit when the client was only dropped).
    fn sign(&self, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
            .args([
                "--mongodb-uri",
                &database_uri(),
                "--database",
                &self.name,
                "-q",
            ])
            .args(args)
            .output()
            .expect("cannot run mongodns-sign");
        assert!(
            !stderr(&out).contains("panicked"),
            "mongodns-sign {args:?} panicked: {}",
            stderr(&out)
        );
        out
    }

    /// Runs and expects success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.sign(args);
        assert!(
            out.status.success(),
            "mongodns-sign {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn drop_db(self) {
        block_on(self.0.drop_db());
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let db = Db::new("signcli_err");
    let o = db.sign(&["show-zone", "nosuch.example"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("zone nosuch.example. does not exist"),
        "{}",
        stderr(&o)
    );
    let o = db.sign(&["secure-zone", "nosuch.example"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"));
    let o = db.sign(&["resign", "example.net"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not secured"), "{}", stderr(&o));
    // --follow checks before it starts polling (it would run forever).
    let o = db.sign(&["resign", "example.net", "--follow"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not secured"), "{}", stderr(&o));
    let o = db.sign(&["resign", "nosuch.example", "--follow"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    let o = db.sign(&["secure-zone", "example.net", "--algorithm", "md5"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown algorithm md5"));
    let o = db.sign(&["activate-key", "example.net", "12345"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("has no key 12345"));
    let o = Command::new(env!("CARGO_BIN_EXE_mongodns-sign"))
        .args([
            "--mongodb-uri",
            "mongodb://127.0.0.1:1/?directConnection=true",
            "--db-timeout-ms",
            "300",
            "show-zone",
            "example.net",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unreachable"), "{}", stderr(&o));
    db.drop_db();
}

fn count(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}

/// Key tags of the RRSIGs over `rtype` in an exported zone.
fn sig_tags(export: &str, rtype: &str) -> Vec<u16> {
    let mut tags: Vec<u16> = export
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(3) == Some(&"RRSIG") && f.get(4) == Some(&rtype)).then(|| f[10].parse().unwrap())
        })
        .collect();
    tags.sort_unstable();
    tags.dedup();
    tags
}

/// Checks an exported zone with BIND's `dnssec-verify`; a missing tool fails
/// the test (it would otherwise check nothing).
fn verify(export: &str, zone: &str, csk: bool) {
    if let Err(e) = Command::new("dnssec-verify").arg("-h").output() {
        panic!("dnssec-verify cannot be run ({e}): install Debian's bind9-utils");
    }
    let path = std::env::temp_dir().join(unique_name("signcli"));
    std::fs::write(&path, export).unwrap();
    let mut cmd = Command::new("dnssec-verify");
    if csk {
        cmd.arg("-z");
    }
    let o = cmd.args(["-o", zone]).arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(o.status.success(), "dnssec-verify: {}", stderr(&o));
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(said.contains("Zone fully signed"), "dnssec-verify: {said}");
}

#[test]
fn zsk_and_ksk_rollovers_and_no_private_key_in_output() {
    let db = Db::new("signcli_roll");
    let shown = db.ok(&["secure-zone", "example.net"]);
    assert!(shown.contains("example.net. IN DS "), "{shown}");
    let keys = runtime()
        .block_on(db.store.zone_keys(&"example.net.".parse().unwrap()))
        .unwrap();
    assert_eq!(keys.len(), 2);
    let ksk = keys.iter().find(|k| k.is_ksk()).unwrap().clone();
    let zsk = keys.iter().find(|k| !k.is_ksk()).unwrap().clone();
    let ds: Vec<&str> = shown.lines().filter(|l| l.contains(" IN DS ")).collect();
    assert_eq!(ds.len(), 1);
    let f: Vec<&str> = ds[0].split_whitespace().collect();
    assert_eq!(f[3].parse::<u16>().unwrap(), ksk.tag);
    assert_eq!((f[4], f[5], f[6].len()), ("13", "2", 64));

    // Private keys (the P-256 scalar inside the PKCS#8) are never printed.
    let export = db.ok(&["export-zone", "example.net"]);
    for k in &keys {
        let scalar = &k.private_pkcs8[36..68];
        let hex = dns::encoding::to_hex(scalar);
        let b64 = dns::encoding::base64(scalar);
        for out in [&shown, &export] {
            assert!(!out.to_lowercase().contains(&hex));
            assert!(!out.contains(&b64[..40]));
        }
        assert!(!format!("{k:?}").contains(&hex));
    }
    verify(&export, "example.net", false);
    assert_eq!(sig_tags(&export, "A"), vec![zsk.tag]);

    // ZSK rollover by pre-publication.
    let added = db.ok(&["add-key", "example.net"]);
    let new_tag: u16 = added.split_whitespace().nth(5).unwrap().parse().unwrap();
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 3);
    assert_eq!(
        sig_tags(&export, "A"),
        vec![zsk.tag],
        "published, not signing yet"
    );
    db.ok(&["activate-key", "example.net", &new_tag.to_string()]);
    db.ok(&["retire-key", "example.net", &zsk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(sig_tags(&export, "A"), vec![new_tag]);
    assert_eq!(
        count(&export, "\tDNSKEY\t"),
        3,
        "the old ZSK stays published"
    );
    verify(&export, "example.net", false);
    db.ok(&["remove-key", "example.net", &zsk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 2);
    verify(&export, "example.net", false);

    // KSK rollover by double signature.
    let added = db.ok(&["add-key", "example.net", "--ksk", "--active"]);
    let new_ksk: u16 = added.split_whitespace().nth(5).unwrap().parse().unwrap();
    let export = db.ok(&["export-zone", "example.net"]);
    let mut both = vec![ksk.tag, new_ksk];
    both.sort_unstable();
    assert_eq!(sig_tags(&export, "DNSKEY"), both);
    let shown = db.ok(&["show-zone", "example.net"]);
    assert_eq!(count(&shown, " IN DS "), 2);
    db.ok(&["remove-key", "example.net", &ksk.tag.to_string()]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(sig_tags(&export, "DNSKEY"), vec![new_ksk]);
    verify(&export, "example.net", false);
    let shown = db.ok(&["show-zone", "example.net"]);
    assert_eq!(count(&shown, " IN DS "), 1);

    // unsecure-zone: no DNSSEC data left, keys gone.
    db.ok(&["unsecure-zone", "example.net"]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(
        count(&export, "RRSIG") + count(&export, "NSEC") + count(&export, "DNSKEY"),
        0
    );
    assert!(db.ok(&["show-zone", "example.net"]).contains("no keys"));
    db.drop_db();
}

#[test]
fn cds_and_cdnskey_follow_the_ksks() {
    let db = Db::new("signcli_cds");
    let shown = db.ok(&["secure-zone", "example.net", "--cds"]);
    let ds: Vec<String> = shown
        .lines()
        .filter(|l| l.contains(" IN DS "))
        .map(|l| l.split(" IN DS ").nth(1).unwrap().to_string())
        .collect();
    let export = db.ok(&["export-zone", "example.net"]);
    let cds: Vec<String> = export
        .lines()
        .filter(|l| l.split('\t').nth(3) == Some("CDS"))
        .map(|l| l.split('\t').nth(4).unwrap().to_string())
        .collect();
    assert_eq!(cds, ds, "CDS is the DS shown for the parent");
    assert_eq!(count(&export, "\tCDNSKEY\t"), 1);
    assert_eq!(sig_tags(&export, "CDS").len(), 1, "CDS signed by the KSK");
    verify(&export, "example.net", false);
    db.ok(&["add-key", "example.net", "--ksk", "--active"]);
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tCDS\t"), 2);
    assert_eq!(count(&export, "\tCDNSKEY\t"), 2);
    verify(&export, "example.net", false);
    db.drop_db();
}

/// Node documents of version `ver` of example.net.
fn version_docs(db: &Db, ver: i64) -> u64 {
    runtime().block_on(async {
        db.store
            .database()
            .collection::<mongodb::bson::Document>("nodes")
            .count_documents(mongodb::bson::doc! {"zone": "example.net.", "ver": ver})
            .await
            .unwrap()
    })
}

/// The zone document of example.net.
fn zone_doc(db: &Db) -> mongodb::bson::Document {
    runtime().block_on(async {
        db.store
            .database()
            .collection::<mongodb::bson::Document>("zones")
            .find_one(mongodb::bson::doc! {"_id": "example.net."})
            .await
            .unwrap()
            .unwrap()
    })
}

fn old_vers(db: &Db) -> Vec<i64> {
    zone_doc(db)
        .get_array("old_vers")
        .map(|a| a.iter().filter_map(|v| v.as_i64()).collect())
        .unwrap_or_default()
}

/// The signer's last progress report for example.net.
fn sign_job(db: &Db) -> (backend_mongo::JobProgress, Option<String>) {
    runtime().block_on(async {
        let jobs = db.store.list_progress().await.unwrap();
        let job = jobs
            .into_iter()
            .find(|j| j.id == "sign:example.net.")
            .expect("the signer reported its progress");
        let phase = db.store.progress_phase(&job.id).await.unwrap();
        (job, phase)
    })
}

#[test]
fn the_replaced_version_is_never_served_and_cleanup_deletes_it() {
    let db = Db::new("signcli_cleanup");
    let v1 = runtime()
        .block_on(db.store.find_zone(&"example.net.".parse().unwrap()))
        .unwrap()
        .unwrap()
        .ver;
    let o = db.sign(&["secure-zone", "example.net", "--grace", "0", "--no-cleanup"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("published after"), "{}", stderr(&o));
    // Switched: the signed version is served, the old one only listed.
    let served = runtime()
        .block_on(db.store.find_zone(&"example.net.".parse().unwrap()))
        .unwrap()
        .unwrap();
    assert!(served.ver > v1);
    assert_eq!(old_vers(&db), vec![v1]);
    assert_eq!(version_docs(&db, v1), 2, "left for cleanup");
    let export = db.ok(&["export-zone", "example.net"]);
    assert_eq!(count(&export, "\tDNSKEY\t"), 2, "{export}");
    assert_eq!(count(&export, "\tSOA\t"), 1, "one version, never a mix");
    let (job, phase) = sign_job(&db);
    assert_eq!((job.kind.as_str(), job.state.as_str()), ("sign", "done"));
    assert_eq!(phase.as_deref(), Some("switching"));

    let o = db.sign(&["cleanup", "example.net", "--grace", "0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("old version(s) [{v1}] deleted, 2 documents")),
        "{}",
        stderr(&o)
    );
    assert_eq!(version_docs(&db, v1), 0);
    assert!(old_vers(&db).is_empty());
    assert_eq!(
        version_docs(&db, served.ver),
        2,
        "the served version is kept"
    );
    let o = db.sign(&["cleanup", "example.net"]);
    assert!(stderr(&o).contains("no old versions"), "{}", stderr(&o));

    // By default secure-zone deletes what it replaced; its progress ends
    // in the cleanup step with every document counted.
    db.ok(&["secure-zone", "example.net", "--grace", "0"]);
    assert_eq!(version_docs(&db, served.ver), 0);
    assert!(old_vers(&db).is_empty());
    let (job, phase) = sign_job(&db);
    assert_eq!(job.state, "done");
    assert_eq!(phase.as_deref(), Some("cleanup"));
    assert_eq!((job.done, job.total), (2, 2), "{job:?}");
    db.drop_db();
}

#[test]
fn a_version_left_pending_by_a_killed_run_is_collected_by_the_next() {
    let db = Db::new("signcli_pending");
    let zone: Name = "example.net.".parse().unwrap();
    // A writer killed midway: a pending version with one node.
    let pending = runtime().block_on(async {
        let writer = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        writer
            .write_nodes(&[NodeWrite {
                name: "half.example.net.".parse().unwrap(),
                rrsets: vec![RRset {
                    rtype: RType::A,
                    ttl: 60,
                    rdata: vec![Box::new([192, 0, 2, 9])],
                }],
            }])
            .await
            .unwrap();
        writer.ver()
    });
    assert_eq!(version_docs(&db, pending), 1);
    // The next run writes above it, never serves it, and deletes it.
    db.ok(&["secure-zone", "example.net", "--grace", "0"]);
    let served = runtime()
        .block_on(db.store.find_zone(&zone))
        .unwrap()
        .unwrap();
    assert!(served.ver > pending);
    assert_eq!(version_docs(&db, pending), 0);
    assert!(old_vers(&db).is_empty());
    assert!(!zone_doc(&db).contains_key("pending_ver"));
    let export = db.ok(&["export-zone", "example.net"]);
    assert!(!export.contains("half.example.net."), "{export}");
    verify(&export, "example.net", false);
    db.drop_db();
}

/// The driver's panic at exit (a dropped client ending its sessions on a
/// runtime already shutting down) came about once in 100–200 runs of a
/// short command; `Db::sign` fails on it.
#[test]
fn short_commands_exit_without_a_panic() {
    let db = Db::new("signcli_exit");
    db.ok(&["secure-zone", "example.net", "--grace", "0"]);
    for _ in 0..60 {
        db.ok(&["show-zone", "example.net"]);
    }
    let o = db.sign(&["show-zone", "nosuch.example"]);
    assert!(!o.status.success());
    db.drop_db();
}

#[test]
fn progress_reports_carry_the_step() {
    let db = Db::new("signcli_progress");
    runtime().block_on(async {
        let job = backend_mongo::ProgressReporter::start(
            db.store.clone(),
            "sign",
            "example.net.",
            Duration::from_millis(50),
        );
        job.set_phase("writing", 10);
        job.set_done(4);
        let mut seen = None;
        for _ in 0..100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let jobs = db.store.list_progress().await.unwrap();
            if let Some(j) = jobs.into_iter().find(|j| j.id == "sign:example.net.") {
                if j.done == 4 {
                    seen = Some(j);
                    break;
                }
            }
        }
        let j = seen.expect("a running report");
        assert_eq!((j.state.as_str(), j.total), ("running", 10));
        assert_eq!(
            db.store
                .progress_phase("sign:example.net.")
                .await
                .unwrap()
                .as_deref(),
            Some("writing")
        );
        job.set_phase("cleanup", 3);
        job.set_done(3);
        job.finish(true).await;
        let j = db
            .store
            .list_progress()
            .await
            .unwrap()
            .into_iter()
            .find(|j| j.id == "sign:example.net.")
            .unwrap();
        assert_eq!((j.state.as_str(), j.done, j.total), ("done", 3, 3));
        assert_eq!(
            db.store
                .progress_phase("sign:example.net.")
                .await
                .unwrap()
                .as_deref(),
            Some("cleanup")
        );
    });
    db.drop_db();
}

#[test]
fn a_writer_whose_version_was_taken_over_never_switches_to_it() {
    let db = Db::new("signcli_takeover");
    let zone: Name = "example.net.".parse().unwrap();
    let node = |rdata: [u8; 4]| NodeWrite {
        name: "ns1.example.net.".parse().unwrap(),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 60,
            rdata: vec![Box::new(rdata)],
        }],
    };
    let a_ver = runtime().block_on(async {
        let apex = db
            .store
            .read_full_node(&zone, 1, &zone)
            .await
            .unwrap()
            .unwrap();
        let apex = NodeWrite {
            name: zone.clone(),
            rrsets: apex.rrsets.iter().map(|s| s.rrset.clone()).collect(),
        };
        // A starts; B (thinking A was killed) takes over and lists A's
        // version as old; A must then fail to switch, B succeeds.
        let a = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        a.write_nodes(&[apex.clone(), node([192, 0, 2, 10])])
            .await
            .unwrap();
        let b = db
            .store
            .begin_zone_write(&zone, WriteMode::Replace)
            .await
            .unwrap();
        assert!(b.ver() > a.ver());
        b.write_nodes(&[apex, node([192, 0, 2, 20])]).await.unwrap();
        // What a signed replace asks when signing its version failed: A's
        // was taken over (and will be deleted), B's is still pending.
        let err = a.ensure_still_pending().await.unwrap_err();
        assert!(
            err.to_string().contains("another writer took over"),
            "{err}"
        );
        b.ensure_still_pending().await.unwrap();
        let a_ver = a.ver();
        let err = a.finish(Duration::ZERO).await.unwrap_err();
        assert!(
            err.to_string().contains("another writer took over"),
            "{err}"
        );
        let served = b.finish(Duration::ZERO).await.unwrap();
        let ns1 = db
            .store
            .get_node(&served, &"ns1.example.net.".parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&*ns1.rrsets[0].rdata[0], &[192, 0, 2, 20]);
        a_ver
    });
    assert_eq!(version_docs(&db, a_ver), 0, "A's version was collected");
    db.drop_db();
}

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
        let edit = backend_mongo::dns::edit::RecordEdit::Add {
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
    let edits = |round: usize| -> Vec<backend_mongo::dns::edit::RecordEdit> {
        (0..2100)
            .map(|i| backend_mongo::dns::edit::RecordEdit::Add {
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
