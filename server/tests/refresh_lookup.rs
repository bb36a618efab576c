//! The signing service looks up the nodes whose signatures are due before
//! it takes the signing lease: while that look-up is held up at the
//! database (on FerretDB it is a scan of the collection), the lease stays
//! free, and a record edit into the zone takes it at once and signs what it
//! writes. One look-up feeds several passes of `--refresh-batch` nodes. A
//! real database behind a relay, the real `mongodns-sign serve`.
//!
//! ```text
//!  secured zone under a policy ─► serve through a Relay holding every
//!  find on nodes by `sx` ─► held: the signing lease is free; an edit
//!  adds a name, signed ─► released: the zone is refreshed and verifies
//!  every signature due at once, --refresh-batch 4 ─► finds by _id (passes)
//!  outnumber the look-ups by expiry
//! ```

use backend_mongo::lock::SIGN_LEASE;
use dns::edit::RecordEdit;
use dns::{Name, RType};
use mongodns_testkit::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ZONE: &str = "due.test.";

const ZONE_TEXT: &str = small_zone!("due.test.", "www IN A 192.0.2.1\n");

/// A `serve` process, killed when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// True for a `find` on `nodes` whose request names `sx`: the look-up of
/// what is due (and of the earliest expiration).
fn finds_by_expiry(request: &[u8]) -> bool {
    let find = b"\x02find\x00\x06\x00\x00\x00nodes\x00";
    request.windows(find.len()).any(|w| w == find) && bson_has_key(request, "sx")
}

/// Waits (at most `secs`) until `done` holds.
fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A zone of `extra` names besides [`ZONE_TEXT`]'s, secured under a
/// policy of 60-s signatures refreshed with `refresh` seconds left.
fn secured(tag: &str, extra: usize, refresh: &str) -> TestZoneDb {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        let mut text = ZONE_TEXT.to_string();
        for i in 0..extra {
            text.push_str(&format!("h{i} IN A 192.0.2.{}\n", i % 250 + 1));
        }
        db.import(ZONE, &text, false).await;
        db
    });
    let policy = format!(
        "add-policy brief --rrsig-lifetime 60 --rrsig-refresh {refresh} --rrsig-jitter 1 \
         --zsk-lifetime 0 --dnskey-ttl 1 --zone-max-ttl 1"
    );
    let policy: Vec<&str> = policy.split(' ').collect();
    run_tool(&db.name, "mongodns-sign", &policy);
    let set = ["set-policy", ZONE, "--policy", "brief"];
    run_tool(&db.name, "mongodns-sign", &set);
    run_tool(&db.name, "mongodns-sign", &["secure-zone", ZONE]);
    db
}

/// `mongodns-sign serve` on `db` through `relay`, with `args`.
fn serve(db: &TestZoneDb, relay: &Relay, args: &[&str]) -> Service {
    Service(
        Command::new(binary("mongodns-sign"))
            .args(["--mongodb-uri", &relay.uri(), "--database", &db.name])
            .args(["serve", "--discover-every", "0.2"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mongodns-sign serve starts"),
    )
}

#[test]
fn a_writer_takes_the_lease_while_the_due_nodes_are_looked_up() {
    let db = secured("refresh_lookup", 0, "30");
    let relay = Relay::to_database();
    relay.hold_requests(finds_by_expiry);
    let _service = serve(&db, &relay, &["--interval", "0.2"]);
    wait_for("the service looks up what is due", 60, || relay.held() > 0);

    let zone: Name = ZONE.parse().unwrap();
    let holder = block_on(db.store.lock_holder(SIGN_LEASE, &zone)).unwrap();
    assert!(
        holder.is_none(),
        "the signing lease is held while the due nodes are looked up: {holder:?}"
    );
    let new: Name = format!("new.{ZONE}").parse().unwrap();
    let add = RecordEdit::add(new.clone(), RType::A, 300, vec![vec![192, 0, 2, 7].into()]);
    block_on(signer::edit::edit_zone(&db.store, &zone, &[add])).expect("the edit succeeds");
    let node = block_on(async {
        let served = db.store.find_zone(&zone).await.unwrap().unwrap();
        let read = db.store.read_full_nodes(&zone, served.ver, &[new]).await;
        read.unwrap().remove(0).expect("the new name is stored")
    });
    let a = node.get(RType::A).expect("its A record");
    assert!(
        !a.sigs.is_empty(),
        "the edit signed what it wrote (the lease was free)"
    );

    // Let the look-up through: the service's pass runs, and the zone verifies.
    relay.release();
    wait_for("the service's first pass", 60, || {
        block_on(db.store.dnssec_config(&zone))
            .unwrap()
            .seen_gen
            .is_some()
    });
    let server = ServerProcess::start(&db.name, &["--axfr-allow", "127.0.0.1/32"]);
    verify_signed_zone(&db.dir, ZONE, &axfr_text(server.port, ZONE));
    drop(server);
    block_on(db.drop_db());
}

#[test]
fn one_look_up_of_what_is_due_feeds_several_passes() {
    // Every signature falls due two to three seconds after it is made.
    let db = secured("refresh_passes", 40, "57");
    let relay = Relay::tapping_database();
    // Looks 5 s apart: every node is due again at each.
    let args = ["--interval", "5", "--refresh-batch", "4"];
    let _service = serve(&db, &relay, &args);
    let count = || {
        let finds = sent_commands(&relay.sent(), "find", "nodes");
        let by_expiry = |f: &&Vec<u8>| bson_has_key(f, "sx");
        let look_ups = finds
            .iter()
            .filter(by_expiry)
            .filter(|f| bson_has_key(f, "$lt") && !bson_has_key(f, "$in"))
            .count();
        let passes = finds
            .iter()
            .filter(by_expiry)
            .filter(|f| bson_has_key(f, "$in"))
            .count();
        (look_ups, passes)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while count().1 < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let (look_ups, passes) = count();
    eprintln!("{look_ups} look-ups of what is due fed {passes} refresh passes of 4 nodes");
    assert!(
        passes >= 20 && passes >= 3 * look_ups,
        "{look_ups} look-ups by expiry for {passes} passes: one look-up a pass"
    );
    block_on(db.drop_db());
}

#[test]
fn nothing_due_no_look_up() {
    // Signatures of 60 s refreshed with 10 s left: none due for 50 s.
    let db = secured("refresh_none_due", 10, "10");
    let relay = Relay::tapping_database();
    let _service = serve(&db, &relay, &["--interval", "0.2"]);
    let count = || {
        let sent = relay.sent();
        let looks = sent_commands(&sent, "find", "zones")
            .iter()
            .filter(|f| !bson_has_key(f, "$or"))
            .count();
        let look_ups = sent_commands(&sent, "find", "nodes")
            .iter()
            .filter(|f| bson_has_key(f, "sx") && bson_has_key(f, "$lt"))
            .count();
        (looks, look_ups)
    };
    let deadline = Instant::now() + Duration::from_secs(40);
    while count().0 < 60 {
        assert!(Instant::now() < deadline, "60 zone reads within 40 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (looks, look_ups) = count();
    eprintln!("{looks} zone reads (looks), {look_ups} look-ups of what is due");
    assert!(
        look_ups <= 2,
        "{look_ups} look-ups of due nodes ({looks} zone reads) while nothing was due"
    );
    block_on(db.drop_db());
}
