//! `resign` and `resign --follow` after other writers: only what changed
//! is signed again, and the zone ends as a full re-sign would leave it.
//!
//! ```text
//!  unsigned writer (merge, delete) ─► change records list the names
//!     ─► resign --follow (Reports) ─► reads and signs only those names
//!     ─► assert_fully_signed: a full resign finds nothing to do
//! ```

use super::*;

/// The RRSIG rdata stored for `rtype` at `owner`.
async fn stored_sigs(db: &TestZoneDb, owner: &str, rtype: RType) -> Vec<Box<[u8]>> {
    let zone = db
        .store
        .find_zone(&name("example.com."))
        .await
        .unwrap()
        .unwrap();
    let node = db
        .store
        .get_node(&zone, &name(owner))
        .await
        .unwrap()
        .unwrap();
    node.rrsig(rtype)
        .map(|s| s.rdata.clone())
        .unwrap_or_default()
}

/// `resign --follow` on the fixture's zone (polling every 100 ms) in the
/// background, reporting to `reports`, until the returned `Notify` fires.
fn spawn_follower(
    f: &Fixture,
    reports: Reports,
) -> (
    std::sync::Arc<tokio::sync::Notify>,
    tokio::task::JoinHandle<Result<(), signer::SignError>>,
) {
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let store = f.db.store.clone();
    let notified = stop.clone();
    let follower = runtime().spawn(async move {
        let zone = name("example.com.");
        let validity = Validity::default();
        let run = signer::follow(
            &store,
            &zone,
            &validity,
            1,
            Duration::from_millis(100),
            Duration::from_secs(3600),
            &reports,
        );
        tokio::select! {
            r = run => r,
            _ = notified.notified() => Ok(()),
        }
    });
    (stop, follower)
}

/// Adds records the way any schema-following writer would, without signing.
async fn unsigned_merge(db: &TestZoneDb, owner: &str, rdata: [u8; 4]) {
    let node = NodeWrite {
        name: name(owner),
        rrsets: vec![RRset {
            rtype: RType::A,
            ttl: 3600,
            rdata: vec![Box::new(rdata)],
        }],
    };
    backend_mongo::testing::merge_as_foreign_writer(&db.store, &name("example.com."), &[node])
        .await
        .unwrap();
}

/// `signer::resign` of what changed (not a full re-sign), two threads.
async fn resign(store: &backend_mongo::Store, zone: &Name) -> signer::Report {
    let validity = Validity::default();
    let r = signer::resign(store, zone, false, &validity, 2, &NoProgress).await;
    r.unwrap()
}

#[test]
fn resign_replaces_only_what_changed_and_follow_closes_the_gap() {
    let f = fixture("dnssec_resign", None);
    let zone = name("example.com.");
    let (www_before, mail_before) = block_on(async {
        (
            stored_sigs(&f.db, "www.example.com.", RType::A).await,
            stored_sigs(&f.db, "mail.example.com.", RType::A).await,
        )
    });
    assert_eq!(www_before.len(), 1);
    // Another writer adds a record to www and a new name, unsigned.
    block_on(async {
        unsigned_merge(&f.db, "www.example.com.", [192, 0, 2, 82]).await;
        unsigned_merge(&f.db, "new.example.com.", [192, 0, 2, 7]).await;
        let r = resign(&f.db.store, &zone).await;
        assert!(r.written > 0);
        // www's signature is new, mail's is the same bytes.
        assert_ne!(
            stored_sigs(&f.db, "www.example.com.", RType::A).await,
            www_before
        );
        assert_eq!(
            stored_sigs(&f.db, "mail.example.com.", RType::A).await,
            mail_before
        );
        // A second run finds nothing to do and writes nothing.
        let again = resign(&f.db.store, &zone).await;
        assert_eq!(again.written, 0);
        assert_eq!(again.stats.signed, 0);
        assert_eq!(again.serial, r.serial);
    });
    let m = ask_until(f.server.port, "www.example.com.", 1, |m| {
        m.answers.len() == 4
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_udp(f.server.port, "new.example.com.", 1, DO);
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_udp(f.server.port, "nex.example.com.", 1, DO);
    verify_section(&m.authorities, &f.keys);
    assert!(covered(&nsecs(&m.authorities), &name("nex.example.com.")));

    // `resign --follow` signs other writers' changes as they land.
    let rt = runtime();
    let (stop, follower) = spawn_follower(&f, Reports::default());
    rt.block_on(unsigned_merge(&f.db, "later.example.com.", [192, 0, 2, 8]));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let m = ask_udp(f.server.port, "later.example.com.", 1, DO);
        if m.answers.len() == 2 {
            assert_eq!(verify_section(&m.answers, &f.keys), 1);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "--follow did not sign a new name in 20 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.notify_one();
    rt.block_on(follower).unwrap().unwrap();
    f.done();
}

/// Every report `resign --follow` made, for the test to look at.
#[derive(Clone, Default)]
struct Reports(std::sync::Arc<std::sync::Mutex<Vec<signer::Report>>>);

impl signer::Progress for Reports {
    fn phase(&self, _: &str, _: u64) {}
    fn set(&self, _: u64) {}
    fn resigned(&self, _: &Name, report: &signer::Report, _: Duration) {
        self.0.lock().unwrap().push(report.clone());
    }
}

impl Reports {
    /// Waits (up to 30 s) for a report after the first `after` that wrote
    /// something, and returns it.
    fn wait_for_write(&self, after: usize) -> signer::Report {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found = {
                let reports = self.0.lock().unwrap();
                let from = after.min(reports.len());
                reports[from..].iter().find(|r| r.written > 0).cloned()
            };
            if let Some(r) = found {
                return r;
            }
            assert!(Instant::now() < deadline, "--follow signed nothing in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Deletes a node the way a program writing to MongoDB directly would.
async fn unsigned_delete(db: &TestZoneDb, owner: &str) {
    let deleted = backend_mongo::testing::delete_nodes_as_foreign_writer(
        &db.store,
        &name("example.com."),
        &[name(owner)],
    )
    .await
    .unwrap();
    assert_eq!(deleted, 1, "{owner} was stored");
}

/// `resign --follow` signs other writers' additions and deletions by
/// reading only the names their change records list, and leaves the zone
/// exactly as a full re-sign would.
fn follow_reads_only_changed_names(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3);
    let zone = name("example.com.");
    let reports = Reports::default();
    let rt = runtime();
    let (stop, follower) = spawn_follower(&f, reports.clone());
    // The first pass is a full one (nothing to write: just secured).
    let deadline = Instant::now() + Duration::from_secs(30);
    while reports.len() == 0 {
        assert!(Instant::now() < deadline, "--follow never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = reports.len();
    // New names (one below a new empty non-terminal) and a new record.
    block_on(async {
        unsigned_merge(&f.db, "www.example.com.", [192, 0, 2, 82]).await;
        unsigned_merge(&f.db, "m.example.com.", [192, 0, 2, 9]).await;
        // A schema-following writer adds the empty non-terminal too.
        let nodes = [
            NodeWrite {
                name: name("newent.example.com."),
                rrsets: Vec::new(),
            },
            NodeWrite {
                name: name("x.newent.example.com."),
                rrsets: vec![RRset {
                    rtype: RType::A,
                    ttl: 3600,
                    rdata: vec![Box::new([192, 0, 2, 10])],
                }],
            },
        ];
        backend_mongo::testing::merge_as_foreign_writer(&f.db.store, &zone, &nodes)
            .await
            .unwrap();
    });
    let r = reports.wait_for_write(before);
    assert!(
        r.nodes <= 8,
        "read {} nodes: more than the names changed",
        r.nodes
    );
    // Wait until every change is in (the writes may span two polls).
    let m = ask_until(f.server.port, "x.newent.example.com.", 1, |m| {
        m.answers.len() == 2
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_until(f.server.port, "m.example.com.", 1, |m| m.answers.len() == 2);
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    let m = ask_until(f.server.port, "www.example.com.", 1, |m| {
        m.answers.len() == 4
    });
    assert_eq!(verify_section(&m.answers, &f.keys), 1);
    std::thread::sleep(Duration::from_millis(500));
    assert_fully_signed(&f);

    // A name deleted behind the signer's back leaves the chain.
    let before = reports.len();
    block_on(unsigned_delete(&f.db, "mail.example.com."));
    let r = reports.wait_for_write(before);
    assert!(r.nodes <= 2, "read {} nodes for one deletion", r.nodes);
    let m = ask_until(f.server.port, "mail.example.com.", 1, |m| {
        m.response_code == ResponseCode::NXDomain
    });
    assert!(verify_section(&m.authorities, &f.keys) >= 2);
    if !nsecs(&m.authorities).is_empty() {
        assert!(covered(&nsecs(&m.authorities), &name("mail.example.com.")));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_fully_signed(&f);
    stop.notify_one();
    rt.block_on(follower).unwrap().unwrap();
    f.done();
}

#[test]
fn follow_reads_only_changed_names_nsec() {
    follow_reads_only_changed_names("dnssec_follow_nsec", None);
}

#[test]
fn follow_reads_only_changed_names_nsec3() {
    follow_reads_only_changed_names(
        "dnssec_follow_nsec3",
        Some(Nsec3Config {
            salt: vec![0xab, 0xcd],
            iterations: 1,
            opt_out: false,
        }),
    );
}
