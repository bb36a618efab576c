//! `mongodns-import --replace` while serving is atomic for readers: every
//! answer comes wholly from the old zone or wholly from the new one.
//!
//! Two versions of a zone differ in an RRset (two TXT records) and in a
//! CNAME chain (`www` → `t-one` or `t-two`, each target existing in one
//! version only). Readers ask both over UDP and TCP while the zone is
//! replaced back and forth; a mix would show as a TXT set from both
//! versions, or a CNAME whose target is missing (NXDOMAIN) or of the
//! other version.

use hickory_proto::op::ResponseCode;
use loadtools::import::{import_file, ImportOptions, NoProgress};
use mongodns_testkit::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn version(tag: &str, addr: u8) -> String {
    let mut z = format!(
        "$ORIGIN swap.test.\n$TTL 60\n@ IN SOA ns admin 1 3600 600 86400 60\n@ IN NS ns\nns IN A 192.0.2.53\n\
         mix IN TXT \"{tag}-a\"\nmix IN TXT \"{tag}-b\"\nwww IN CNAME t-{tag}\nt-{tag} IN A 192.0.2.{addr}\n"
    );
    // Filler, so that an import takes a while.
    for i in 0..800 {
        z.push_str(&format!("f{i} IN A 10.0.{}.{}\n", i / 250, i % 250 + 1));
    }
    z
}

#[test]
fn readers_see_the_old_zone_or_the_new_one_never_a_mix() {
    let db = block_on(async {
        let db = TestZoneDb::new("swap").await;
        db.import("swap.test.", &version("one", 1), true).await;
        db
    });
    let server = ServerProcess::start(&db.name, &["--freshness-ms", "50"]);
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let seen_one = Arc::new(AtomicUsize::new(0));
    let seen_two = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for reader in 0..2 {
        let (stop, one, two) = (stop.clone(), seen_one.clone(), seen_two.clone());
        readers.push(std::thread::spawn(move || {
            let mut asked = 0;
            while !stop.load(Ordering::Relaxed) {
                let tcp = reader == 1 && asked % 4 == 0;
                let ask = |name, qtype| {
                    if tcp {
                        ask_tcp(port, name, qtype, None)
                    } else {
                        ask_udp(port, name, qtype, None)
                    }
                };
                let m = ask("mix.swap.test.", 16);
                assert_eq!(m.metadata.response_code, ResponseCode::NoError);
                let mut txt = lines(&m.answers);
                txt.iter_mut()
                    .for_each(|l| *l = l.rsplit(' ').next().unwrap().trim_matches('"').to_string());
                txt.sort();
                let tag = match txt.as_slice() {
                    [a, b] if a == "one-a" && b == "one-b" => "one",
                    [a, b] if a == "two-a" && b == "two-b" => "two",
                    other => panic!("a mixed or partial RRset: {other:?}"),
                };
                if tag == "one" {
                    one.fetch_add(1, Ordering::Relaxed);
                } else {
                    two.fetch_add(1, Ordering::Relaxed);
                }
                let m = ask("www.swap.test.", 1);
                assert_eq!(
                    m.metadata.response_code,
                    ResponseCode::NoError,
                    "a CNAME to a target of the other version"
                );
                let got = lines(&m.answers).join(" | ");
                let ok_one = got.contains("CNAME t-one.swap.test.") && got.contains("192.0.2.1");
                let ok_two = got.contains("CNAME t-two.swap.test.") && got.contains("192.0.2.2");
                assert!(
                    m.answers.len() == 2 && (ok_one ^ ok_two),
                    "a mixed chain: {got}"
                );
                asked += 1;
            }
            asked
        }));
    }
    // Replace back and forth, with the importer's real grace period so that
    // a reader in the middle of a query still finds the version it began with.
    block_on(async {
        for round in 0..6 {
            let (tag, addr) = if round % 2 == 0 {
                ("two", 2)
            } else {
                ("one", 1)
            };
            let path = std::env::temp_dir().join(format!("{}-{round}.zone", db.name));
            std::fs::write(&path, version(tag, addr)).unwrap();
            let options = ImportOptions {
                zone: "swap.test.".parse().unwrap(),
                replace: true,
                batch_size: 100,
                in_flight: 2,
                grace: Duration::from_millis(700),
            };
            import_file(&db.store, &path, &options, &NoProgress)
                .await
                .expect("import");
            let _ = std::fs::remove_file(&path);
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    stop.store(true, Ordering::Relaxed);
    let asked: usize = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let (one, two) = (
        seen_one.load(Ordering::Relaxed),
        seen_two.load(Ordering::Relaxed),
    );
    eprintln!("{asked} question pairs: {one} saw version one, {two} saw version two");
    assert!(
        one > 0 && two > 0,
        "both versions were seen: the switch happened under the readers"
    );
    drop(server);
    block_on(db.drop_db());
}
