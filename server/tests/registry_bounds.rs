//! The zone lookup while the zone registry is incomplete (more zones than
//! `--zone-preload-max`, or right after `POST /purge`): a name 110 labels
//! deep costs one read for all its candidate apexes, not one per label;
//! what was read is remembered per suffix; and the answers stay right
//! (REFUSED in no zone, the deepest zone wins, a new zone is served and a
//! deleted one is not, within the freshness bound).
//!
//! ```text
//!  server ─► Relay (tapping) ─► database
//!  per deep name: the `find` commands on `zones` the server sent (what
//!  the database does), and `db_queries` (passes through the DbGate)
//! ```

use hickory_proto::op::ResponseCode;
use mongodns_testkit::*;

const TOKEN: &str = "registry-bounds-token";

/// Four zones, one nested in another (its apex five labels below the
/// parent's): a preload of at most two leaves the registry incomplete.
const ZONES: [(&str, &str); 4] = [
    ("one.test.", "www IN A 192.0.2.1\n"),
    ("two.test.", "www IN A 192.0.2.2\n"),
    ("deep.example.", "www IN A 192.0.2.3\n"),
    ("a.b.c.d.deep.example.", "www IN A 192.0.2.4\n"),
];

fn zone_text(apex: &str, body: &str) -> String {
    format!("$ORIGIN {apex}\n$TTL 300\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.53\n{body}")
}

/// A server on a database of its own, reached through a relay that keeps
/// a copy of every command (`tap`), and its control port.
struct Served {
    db: TestZoneDb,
    server: ServerProcess,
    control: u16,
    tap: Relay,
}

fn start(tag: &str, extra: &[&str]) -> Served {
    let db = block_on(async {
        let db = TestZoneDb::new(tag).await;
        for (apex, body) in ZONES {
            db.import(apex, &zone_text(apex, body), false).await;
        }
        db
    });
    let listen = format!("127.0.0.1:{}", free_tcp_port());
    let control: u16 = listen.rsplit(':').next().unwrap().parse().unwrap();
    let mut args = vec!["--control-listen", &listen, "--control-token", TOKEN];
    args.extend_from_slice(extra);
    let tap = Relay::tapping_database();
    let server = ServerProcess::start_with_uri(&tap.uri(), &db.name, &args);
    Served {
        db,
        server,
        control,
        tap,
    }
}

/// The `find` commands on `zones` the server has sent so far: each is one
/// round trip to the database, whatever the DbGate counted.
fn zone_finds(tap: &Relay) -> usize {
    sent_commands(&tap.sent(), "find", "zones").len()
}

/// What the deep names cost, per name.
struct Cost {
    /// Passes through the DbGate (`db_queries`), on average.
    gate_passes: f64,
    /// `find` commands on `zones`, for the costliest name.
    zone_finds_most: usize,
    /// `find` commands on `zones`, on average.
    zone_finds: f64,
}

/// A name `labels` labels deep above `suffix`, every label random: the
/// top one (right under `suffix`) of 8 characters, the others of one (a
/// name stays within 255 octets).
fn deep_name(rng: &mut Rng, labels: usize, suffix: &str) -> String {
    let label = |rng: &mut Rng, len: usize| {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALPHABET[rng.below(36) as usize] as char)
            .collect::<String>()
    };
    let mut parts: Vec<String> = (1..labels).map(|_| label(rng, 1)).collect();
    parts.push(label(rng, 8));
    format!("{}.{suffix}", parts.join("."))
}

/// The rcode of `name`, and the owner of the SOA in the authority section.
fn ask(port: u16, name: &str) -> (ResponseCode, Option<String>) {
    let m = ask_udp(port, name, 1, None);
    let soa = m
        .authorities
        .iter()
        .find(|r| u16::from(r.record_type()) == 6)
        .map(|r| r.name.to_string());
    (m.metadata.response_code, soa)
}

/// Asks 10 deep names under each suffix and checks each answer; returns
/// what they cost.
fn deep_reads(s: &Served, rng: &mut Rng) -> Cost {
    let (port, control) = (s.server.port, s.control);
    let cases = [
        ("nowhere.invalid.", ResponseCode::Refused, None),
        ("one.test.", ResponseCode::NXDomain, Some("one.test.")),
        (
            "deep.example.",
            ResponseCode::NXDomain,
            Some("deep.example."),
        ),
        (
            "x.c.d.deep.example.",
            ResponseCode::NXDomain,
            Some("deep.example."),
        ),
        (
            "a.b.c.d.deep.example.",
            ResponseCode::NXDomain,
            Some("a.b.c.d.deep.example."),
        ),
    ];
    let before = stat(control, "db_queries");
    let (mut names, mut finds, mut most) = (0, 0, 0);
    for (suffix, rcode, soa) in cases {
        for _ in 0..10 {
            let name = deep_name(rng, 110, suffix);
            // The command is copied before the relay passes it on, so
            // every find of this name is in the copy once it is answered.
            let finds_before = zone_finds(&s.tap);
            let (got, owner) = ask(port, &name);
            let found = zone_finds(&s.tap) - finds_before;
            assert_eq!(got, rcode, "{name}");
            assert_eq!(owner.as_deref(), soa, "the zone answering {name}");
            names += 1;
            finds += found;
            most = most.max(found);
        }
    }
    let passes = stat(control, "db_queries") - before;
    let sent = sent_commands(&s.tap.sent(), "find", "zones");
    let late = sent[sent.len() - finds..].iter();
    let bare = late.filter(|d| !bson_has_key(d, "maxTimeMS")).count();
    assert_eq!(bare, 0, "zone reads without a deadline (maxTimeMS)");
    println!(
        "{names} names 110+ labels deep: {passes} DbGate passes (db_queries), \
         {finds} finds on zones ({most} for the costliest name)"
    );
    Cost {
        gate_passes: passes as f64 / names as f64,
        zone_finds_most: most,
        zone_finds: finds as f64 / names as f64,
    }
}

/// The zone lookup of a deep name is one read of `zones`, whatever its
/// depth, and the whole name a few passes through the gate.
fn assert_cheap(cost: &Cost) {
    assert!(
        cost.zone_finds_most <= 2,
        "{} finds on zones for one deep name ({:.1} a name)",
        cost.zone_finds_most,
        cost.zone_finds
    );
    // One zone lookup, and a read or two of the zone's own levels.
    let passes = cost.gate_passes;
    assert!(passes <= 4.0, "{passes} DbGate passes per deep name");
}

/// The generator, from `$REGISTRY_BOUNDS_SEED` or the clock (printed).
fn seeded() -> Rng {
    let rng = Rng(seed("REGISTRY_BOUNDS_SEED"));
    println!("seed {}", rng.0);
    rng
}

fn assert_registry_incomplete(control: u16) {
    assert_eq!(
        stat(control, "zone_registry_complete"),
        0,
        "the registry must be incomplete for this measurement"
    );
}

#[test]
fn deep_names_cost_a_few_reads_when_the_registry_is_incomplete() {
    let served = start("regdeep", &["--zone-preload-max", "2"]);
    let (port, control) = (served.server.port, served.control);
    let mut rng = seeded();
    // Answers from zones the preload did not load, the deepest zone first.
    let www = |name: &str| lines(&ask_udp(port, name, 1, None).answers);
    assert_eq!(www("www.one.test."), ["www.one.test. 300 A 192.0.2.1"]);
    assert_eq!(
        www("www.a.b.c.d.deep.example."),
        ["www.a.b.c.d.deep.example. 300 A 192.0.2.4"]
    );
    assert_eq!(
        www("www.deep.example."),
        ["www.deep.example. 300 A 192.0.2.3"]
    );
    let cost = deep_reads(&served, &mut rng);
    assert_registry_incomplete(control);
    assert_cheap(&cost);
    // A name asked again costs nothing, a name one label below a known
    // suffix one read at most.
    let name = deep_name(&mut rng, 110, "nowhere.invalid.");
    assert_eq!(ask(port, &name).0, ResponseCode::Refused);
    let (before, finds_before) = (stat(control, "db_queries"), zone_finds(&served.tap));
    assert_eq!(ask(port, &name).0, ResponseCode::Refused);
    assert_eq!(ask(port, &format!("q.{name}")).0, ResponseCode::Refused);
    assert!(stat(control, "db_queries") - before <= 1);
    assert!(zone_finds(&served.tap) - finds_before <= 1);
    drop(served.server);
    block_on(served.db.drop_db());
}

#[test]
fn deep_names_cost_a_few_reads_right_after_a_purge() {
    // A long poll interval: the registry stays incomplete for a while
    // after the purge (it is loaded again after the next poll).
    let served = start("regpurge", &["--freshness-ms", "60000"]);
    let control = served.control;
    let mut rng = seeded();
    time_until("the preload", || {
        stat(control, "zone_registry_complete") == 1
    });
    let (status, body) = http_as(control, "POST", "/purge", Some(TOKEN));
    assert!(status.contains("200"), "{status} {body}");
    assert_registry_incomplete(control);
    let cost = deep_reads(&served, &mut rng);
    assert_registry_incomplete(control);
    assert_cheap(&cost);
    drop(served.server);
    block_on(served.db.drop_db());
}

#[test]
fn zones_created_and_deleted_are_seen_while_the_registry_is_incomplete() {
    let Served { db, server, .. } = start(
        "regfresh",
        &["--zone-preload-max", "2", "--freshness-ms", "100"],
    );
    let port = server.port;
    let name = "www.new.nowhere.invalid.";
    // Asked before the zone exists: "not a zone" is remembered per suffix.
    assert_eq!(ask(port, name).0, ResponseCode::Refused);
    assert_eq!(
        ask(port, "x.y.z.www.new.nowhere.invalid.").0,
        ResponseCode::Refused
    );
    let apex = "new.nowhere.invalid.";
    block_on(db.import(apex, &zone_text(apex, "www IN A 192.0.2.9\n"), false));
    let took = time_until("the new zone", || {
        lines(&ask_udp(port, name, 1, None).answers) == ["www.new.nowhere.invalid. 300 A 192.0.2.9"]
    });
    println!("new zone served after {took:?}");
    block_on(db.store.delete_zone(&apex.parse().unwrap())).unwrap();
    let took = time_until("the deletion", || {
        ask(port, name).0 == ResponseCode::Refused
    });
    println!("deleted zone refused after {took:?}");
    drop(server);
    block_on(db.drop_db());
}
