//! The denial cache (docs/caches.md, "Denial records") against the real
//! server with the packet cache off, so every answer runs the pipeline.
//!
//! ```text
//!  DENIALS (DO=1) ─► server, denial cache on  ─┐ byte for byte
//!                 ─► server, denial cache off ─┘ the same
//!  many NXDOMAIN names ─► few denial reads (one interval covers many);
//!  a write ─► the zone's intervals void ─► read again
//! ```

use super::*;

/// DO=1 questions answered with denial proofs: NXDOMAIN (below the apex
/// record, in the middle, past the last name: the wrap), NODATA (a name,
/// an empty non-terminal, the apex), wildcard answer and wildcard NODATA,
/// and a referral without DS.
const DENIALS: &[(&str, u16)] = &[
    ("x.nothing.example.com.", 1),
    ("nothing.example.com.", 1),
    ("0.example.com.", 1),
    ("nx1.example.com.", 1),
    ("nx2.example.com.", 28),
    ("zzz.example.com.", 1),
    ("www.example.com.", 16),
    ("b.c.example.com.", 1),
    ("example.com.", 16),
    ("foo.wild.example.com.", 1),
    ("foo.wild.example.com.", 16),
    ("www.open.example.com.", 1),
];

/// A server on `f`'s database with the packet cache off (so every answer
/// runs the pipeline and its denial lookups) and a control port.
fn pipeline_server(f: &Fixture, extra: &[&str]) -> (ServerProcess, u16) {
    let control = free_tcp_port();
    let listen = format!("127.0.0.1:{control}");
    let mut args = vec!["--packet-cache-entries", "0", "--control-listen", &listen];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(&f.db.name, &args);
    ask_until(server.port, "example.com.", 48, |m| !m.answers.is_empty());
    (server, control)
}

fn raw_tcp(port: u16, qname: &str, qtype: u16) -> Vec<u8> {
    tcp_exchange(port, &build_query(0x0d0d, qname, qtype, DO, false))
}

fn denials_are_identical_with_the_cache_on_and_off(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3);
    let (cached, control) = pipeline_server(&f, &[]);
    let (uncached, _) = pipeline_server(&f, &["--no-cache"]);
    let mut after_first = 0;
    for round in 0..2 {
        for (qname, qtype) in DENIALS {
            let a = raw_tcp(cached.port, qname, *qtype);
            let b = raw_tcp(uncached.port, qname, *qtype);
            assert_eq!(
                a, b,
                "{qname} {qtype}, round {round}: cache on and off differ"
            );
            let m = Message::from_vec(&a).unwrap();
            assert!(
                verify_section(&m.authorities, &f.keys) > 0,
                "{qname} {qtype}"
            );
        }
        if round == 0 {
            after_first = stat(control, "denial_cache_misses");
            assert!(after_first > 0);
        }
    }
    // The second round read no denial record from the database.
    assert_eq!(stat(control, "denial_cache_misses"), after_first);
    assert!(stat(control, "denial_cache_hits") >= DENIALS.len() as u64);
    assert!(stat(control, "denial_cache_entries") > 0);
    f.done();
}

#[test]
fn denial_answers_are_identical_with_the_cache_on_and_off_nsec() {
    denials_are_identical_with_the_cache_on_and_off("denial_same_nsec", None);
}

#[test]
fn denial_answers_are_identical_with_the_cache_on_and_off_nsec3() {
    let cfg = Nsec3Config {
        iterations: 1,
        salt: vec![0xab, 0xcd],
        opt_out: false,
    };
    denials_are_identical_with_the_cache_on_and_off("denial_same_nsec3", Some(cfg));
}

/// The denial key space of a zone: names for NSEC, hashes for NSEC3.
struct Keys(Option<Nsec3Config>);

impl Keys {
    fn of(&self, n: &str) -> String {
        match &self.0 {
            Some(c) => base32hex(&nsec3_hash(&name(n), &c.salt, c.iterations)),
            None => name(n).canonical_key(),
        }
    }

    /// The (owner key, next key) of the records proving a reply.
    fn intervals(&self, m: &Message) -> Vec<(String, String)> {
        match &self.0 {
            Some(_) => nsec3s(&m.authorities)
                .into_iter()
                .map(|(o, n, _, _)| (o, n))
                .collect(),
            None => nsecs(&m.authorities)
                .into_iter()
                .map(|(o, n, _)| (o.canonical_key(), n.canonical_key()))
                .collect(),
        }
    }

    /// The interval of `list` strictly covering `n`'s key (wrapping).
    fn covering(&self, list: &[(String, String)], n: &str) -> Option<(String, String)> {
        let k = self.of(n);
        list.iter()
            .find(|(o, next)| (*o < k && k < *next) || (next <= o && (k > *o || k < *next)))
            .cloned()
    }

    /// A name `<prefix><i>.example.com.` whose key lies strictly inside (lo, hi).
    fn name_inside(&self, prefix: &str, lo: &str, hi: &str) -> String {
        (0..100_000)
            .map(|i| format!("{prefix}{i}.example.com."))
            .find(|n| {
                let k = self.of(n);
                if lo < hi {
                    lo < k.as_str() && k.as_str() < hi
                } else {
                    k.as_str() > lo || k.as_str() < hi
                }
            })
            .expect("a name in the interval")
    }
}

fn nxdomain_names_share_intervals(tag: &str, nsec3: Option<Nsec3Config>) {
    let f = fixture(tag, nsec3.clone());
    let keys = Keys(nsec3);
    let (server, control) = pipeline_server(&f, &["--freshness-ms", "100"]);
    let ask = |n: &str| {
        let m = ask_tcp(server.port, n, 1, DO);
        assert_eq!(m.metadata.response_code, ResponseCode::NXDomain, "{n}");
        verify_section(&m.authorities, &f.keys);
        assert_all_signed(&m.authorities, &[]);
        m
    };
    let first = "nx1.example.com.";
    let m = ask(first);
    let list = keys.intervals(&m);
    let (lo, hi) = keys.covering(&list, first).expect("the name is covered");
    // Another never-asked name in the same interval: its proof is the
    // same records, all cached, so no denial read at all.
    let second = keys.name_inside("nx9", &lo, &hi);
    let (hits, misses) = (
        stat(control, "denial_cache_hits"),
        stat(control, "denial_cache_misses"),
    );
    let m = ask(&second);
    assert_eq!(
        keys.covering(&keys.intervals(&m), &second),
        Some((lo.clone(), hi))
    );
    assert_eq!(
        stat(control, "denial_cache_misses"),
        misses,
        "no database read"
    );
    assert!(stat(control, "denial_cache_hits") >= hits + 2);

    // A merge import adds a name between the interval's owner and the
    // second name: the second name's proof must now be the new record.
    let added = keys.name_inside("nx0", &lo, &keys.of(&second));
    block_on(f.db.import(
        "example.com.",
        &format!("$ORIGIN example.com.\n$TTL 300\n{added} A 192.0.2.77\n"),
        false,
    ));
    let added_key = keys.of(&added);
    let m = ask_until(server.port, &second, 1, |m| {
        keys.covering(&keys.intervals(m), &second)
            .is_some_and(|(o, _)| o == added_key)
    });
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    verify_section(&m.authorities, &f.keys);
    assert_all_signed(&m.authorities, &[]);
    let before_resign = lines(&m.authorities);

    // A re-sign (every RRset signed again, published at once): new
    // signatures, read again from the database, and still valid.
    let misses = stat(control, "denial_cache_misses");
    let zone = name("example.com.");
    block_on(async {
        signer::secure_zone(
            &f.db.store,
            &zone,
            &secure_options(keys.0.clone()),
            &NoProgress,
        )
        .await
        .expect("re-sign")
    });
    // The re-sign deletes the old version at once (no grace period here):
    // until the server notices the switch it may read that version while
    // it is being deleted, so wait for the new version's complete proof.
    let m = ask_until(server.port, &second, 1, |m| {
        lines(&m.authorities) != before_resign
            && keys
                .covering(&keys.intervals(m), &second)
                .is_some_and(|(o, _)| o == added_key)
    });
    verify_section(&m.authorities, &f.keys);
    assert_all_signed(&m.authorities, &[]);
    assert!(
        stat(control, "denial_cache_misses") > misses,
        "the re-sign voided the cache"
    );
    f.done();
}

#[test]
fn nxdomain_names_share_intervals_and_writes_void_them_nsec() {
    nxdomain_names_share_intervals("denial_interval_nsec", None);
}

#[test]
fn nxdomain_names_share_intervals_and_writes_void_them_nsec3() {
    let cfg = Nsec3Config {
        iterations: 1,
        salt: vec![0xab, 0xcd],
        opt_out: false,
    };
    nxdomain_names_share_intervals("denial_interval_nsec3", Some(cfg));
}
