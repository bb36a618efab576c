//! `mongodns-zone` as an operator runs it, against the test database:
//! a zone created, records added, replaced and deleted one at a time (the
//! zone printed after each), the serial moved, zones listed page by page;
//! bad input exits 2 naming the problem, a refused edit exits 1; in a
//! secured zone every edit leaves a zone `dnssec-verify` accepts.

use backend_mongo::testing::{block_on, database_uri, unique_name, TestDb};
use std::process::{Command, Output};

struct Cli {
    db: TestDb,
}

impl Cli {
    fn new(tag: &str) -> Cli {
        Cli {
            db: block_on(TestDb::new(tag)),
        }
    }

    fn run(&self, bin: &str, args: &[&str]) -> Output {
        let out = Command::new(bin)
            .args([
                "--mongodb-uri",
                &database_uri(),
                "--database",
                &self.db.name,
            ])
            .args(args)
            .output()
            .expect("cannot run the binary");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        out
    }

    fn zone(&self, args: &[&str]) -> Output {
        self.run(env!("CARGO_BIN_EXE_mongodns-zone"), args)
    }

    /// Runs `mongodns-zone`, expects success, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.zone(args);
        assert!(
            out.status.success(),
            "mongodns-zone {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `mongodns-zone`, expects exit status `code`, returns stderr.
    fn fails(&self, code: i32, args: &[&str]) -> String {
        let out = self.zone(args);
        assert_eq!(out.status.code(), Some(code), "mongodns-zone {args:?}");
        String::from_utf8(out.stderr).unwrap()
    }

    fn drop_db(self) {
        block_on(self.db.drop_db());
    }
}

/// The records of `name` (owner at the line start) in a printed zone.
fn records<'a>(zone_text: &'a str, name: &str) -> Vec<&'a str> {
    zone_text
        .lines()
        .filter(|l| l.split_whitespace().next() == Some(name))
        .collect()
}

#[test]
fn records_change_one_at_a_time() {
    let cli = Cli::new("zonecli_edit");
    let created = cli.ok(&[
        "create-zone",
        "example.org",
        "--ns",
        "ns1",
        "--serial",
        "100",
    ]);
    assert!(created.contains("serial 100"), "{created}");
    cli.ok(&["add-record", "example.org", "ns1", "A", "192.0.2.53"]);
    cli.ok(&[
        "add-record",
        "example.org",
        "www",
        "A",
        "192.0.2.1",
        "192.0.2.2",
        "--ttl",
        "60",
    ]);
    cli.ok(&[
        "add-record",
        "example.org",
        "@",
        "MX",
        "10 mail.example.org.",
    ]);
    cli.ok(&[
        "add-record",
        "example.org",
        "txt.deep",
        "TXT",
        "\"v=spf1 -all\"",
    ]);
    let z = cli.ok(&["show-zone", "example.org"]);
    assert_eq!(records(&z, "www.example.org.").len(), 2, "{z}");
    assert!(z.contains("\"v=spf1 -all\""), "{z}");
    assert!(z.contains("MX\t10 mail.example.org."), "{z}");

    let out = cli.ok(&["delete-record", "example.org", "www", "A", "192.0.2.1"]);
    assert!(out.contains("www.example.org.: changed"), "{out}");
    let z = cli.ok(&["show-zone", "example.org"]);
    assert_eq!(
        records(&z, "www.example.org."),
        vec!["www.example.org.\t60\tIN\tA\t192.0.2.2"]
    );
    cli.ok(&[
        "replace-rrset",
        "example.org",
        "www",
        "A",
        "198.51.100.7",
        "--ttl",
        "300",
    ]);
    let z = cli.ok(&["show-zone", "example.org"]);
    assert_eq!(
        records(&z, "www.example.org."),
        vec!["www.example.org.\t300\tIN\tA\t198.51.100.7"]
    );
    cli.ok(&["delete-rrset", "example.org", "www", "A"]);
    cli.ok(&["delete-name", "example.org", "txt.deep"]);
    let z = cli.ok(&["show-zone", "example.org"]);
    assert!(records(&z, "www.example.org.").is_empty(), "{z}");
    assert!(
        !z.contains("deep.example.org."),
        "the empty non-terminal went too: {z}"
    );
    let out = cli.ok(&["increase-serial", "example.org"]);
    let listed = cli.ok(&["list-zones"]);
    let serial = listed.split_whitespace().nth(2).unwrap().to_string();
    assert!(
        out.contains(&format!("serial {serial}")),
        "{out} / {listed}"
    );
    assert!(serial.parse::<u32>().unwrap() > 100);
    // Nothing to do is no change and no new serial.
    let out = cli.ok(&["delete-name", "example.org", "nothing"]);
    assert!(
        out.contains("nothing to change") && !out.contains("serial"),
        "{out}"
    );
    cli.drop_db();
}

#[test]
fn bad_input_exits_2_and_refused_edits_exit_1() {
    let cli = Cli::new("zonecli_bad");
    cli.ok(&["create-zone", "example.org", "--ns", "ns1.example.net."]);
    let e = cli.fails(2, &["add-record", "example.org", "www", "BOGUS", "1"]);
    assert!(e.contains("unknown record type"), "{e}");
    let e = cli.fails(2, &["add-record", "example.org", "www", "A", "300.1.1.1"]);
    assert!(e.contains("bad A data"), "{e}");
    let e = cli.fails(
        2,
        &[
            "add-record",
            "example.org",
            "www.example.net.",
            "A",
            "192.0.2.1",
        ],
    );
    assert!(e.contains("not in zone example.org."), "{e}");
    let e = cli.fails(2, &["add-record", "example..org", "www", "A", "192.0.2.1"]);
    assert!(e.contains("bad zone name"), "{e}");
    let e = cli.fails(1, &["delete-rrset", "example.org", "@", "NS"]);
    assert!(e.contains("cannot be deleted"), "{e}");
    cli.ok(&["add-record", "example.org", "alias", "CNAME", "www"]);
    let e = cli.fails(1, &["add-record", "example.org", "alias", "A", "192.0.2.1"]);
    assert!(e.contains("CNAME"), "{e}");
    let e = cli.fails(1, &["add-record", "example.com", "www", "A", "192.0.2.1"]);
    assert!(e.contains("does not exist"), "{e}");
    // The signer's types, in a zone not secured either.
    let key = "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==";
    let e = cli.fails(1, &["add-record", "example.org", "@", "DNSKEY", key]);
    assert!(e.contains("maintained by the signer"), "{e}");
    let e = cli.fails(
        1,
        &["add-record", "example.org", "@", "NSEC3PARAM", "1 0 0 -"],
    );
    assert!(e.contains("maintained by the signer"), "{e}");
    // An RRset no DNS message could hold (4,080 A records: 65,280 octets).
    let addresses: Vec<String> = (0..4080)
        .map(|i| format!("10.0.{}.{}", i >> 8, i & 255))
        .collect();
    let mut args = vec!["add-record", "example.org", "big", "A"];
    args.extend(addresses.iter().map(String::as_str));
    let out = cli.zone(&args);
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "4,080 A records: {e}");
    assert!(e.contains("65264"), "{e}");
    args.pop();
    cli.ok(&args);
    let shown = cli.ok(&["show-zone", "example.org"]);
    assert_eq!(records(&shown, "big.example.org.").len(), 4079);
    assert!(
        !shown.contains("DNSKEY") && !shown.contains("NSEC3PARAM"),
        "{shown}"
    );
    let e = cli.fails(1, &["create-zone", "example.org", "--ns", "ns1"]);
    assert!(e.contains("exists already"), "{e}");
    cli.drop_db();
}

#[test]
fn zones_are_listed_page_by_page() {
    let cli = Cli::new("zonecli_list");
    for z in ["a.test", "b.test", "c.test"] {
        cli.ok(&["create-zone", z, "--ns", "ns1.example.net."]);
    }
    cli.ok(&["add-record", "b.test", "www", "A", "192.0.2.1"]);
    let page = cli.zone(&["list-zones", "--limit", "2", "--counts"]);
    let text = String::from_utf8_lossy(&page.stdout);
    let names: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(names, vec!["a.test.", "b.test."]);
    assert!(text.lines().nth(1).unwrap().ends_with("2 names"), "{text}");
    assert!(String::from_utf8_lossy(&page.stderr).contains("--after b.test."));
    let rest = cli.ok(&["list-zones", "--after", "b.test."]);
    assert_eq!(rest.lines().count(), 1);
    assert!(rest.starts_with("c.test.\t"), "{rest}");
    cli.drop_db();
}

#[test]
fn edits_of_a_secured_zone_keep_it_valid() {
    let cli = Cli::new("zonecli_signed");
    cli.ok(&["create-zone", "example.org", "--ns", "ns1"]);
    cli.ok(&["add-record", "example.org", "ns1", "A", "192.0.2.53"]);
    let secure = cli.run(
        env!("CARGO_BIN_EXE_mongodns-sign"),
        &["-q", "secure-zone", "example.org"],
    );
    assert!(
        secure.status.success(),
        "{}",
        String::from_utf8_lossy(&secure.stderr)
    );
    let check = |what: &str| {
        let signed = cli.ok(&["show-zone", "example.org", "--dnssec"]);
        let path = std::env::temp_dir().join(unique_name("zonecli"));
        std::fs::write(&path, &signed).unwrap();
        let o = Command::new("dnssec-verify")
            .args(["-o", "example.org"])
            .arg(&path)
            .output()
            .expect("dnssec-verify is needed (bind9-utils)");
        let _ = std::fs::remove_file(&path);
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    cli.ok(&["add-record", "example.org", "www", "AAAA", "2001:db8::1"]);
    check("a name added");
    cli.ok(&["add-record", "example.org", "a.b.c", "TXT", "deep"]);
    check("a deep name added");
    cli.ok(&["delete-name", "example.org", "a.b.c"]);
    check("the deep name deleted");
    cli.ok(&["increase-serial", "example.org"]);
    check("the serial moved");
    let e = cli.fails(1, &["delete-rrset", "example.org", "@", "DNSKEY"]);
    assert!(e.contains("maintained by the signer"), "{e}");
    cli.drop_db();
}

#[test]
fn a_zone_is_deleted_and_created_again() {
    let cli = Cli::new("zonecli_delete");
    cli.ok(&["create-zone", "gone.test", "--ns", "ns1.example.net."]);
    cli.ok(&["add-record", "gone.test", "www", "A", "192.0.2.1"]);
    let out = cli.ok(&["delete-zone", "gone.test", "--grace", "0"]);
    assert!(
        out.contains("no longer served") && out.contains("records deleted"),
        "{out}"
    );
    assert!(!cli.ok(&["list-zones"]).contains("gone.test."));
    let e = cli.fails(1, &["add-record", "gone.test", "www", "A", "192.0.2.1"]);
    assert!(e.contains("does not exist"), "{e}");
    let e = cli.fails(1, &["delete-zone", "gone.test"]);
    assert!(e.contains("does not exist"), "{e}");
    cli.ok(&["create-zone", "gone.test", "--ns", "ns1.example.net."]);
    let z = cli.ok(&["show-zone", "gone.test"]);
    assert!(
        !z.contains("www.gone.test."),
        "only the new zone's records: {z}"
    );
    cli.drop_db();
}

#[test]
fn check_zone_names_what_is_wrong() {
    let cli = Cli::new("zonecli_check");
    cli.ok(&["create-zone", "chk.test", "--ns", "ns1"]);
    cli.ok(&["add-record", "chk.test", "ns1", "A", "192.0.2.53"]);
    let out = cli.ok(&["check-zone", "chk.test"]);
    assert!(out.contains("0 errors, 0 warnings"), "{out}");
    // A delegation to a name server inside it, with no glue.
    cli.ok(&["add-record", "chk.test", "sub", "NS", "ns.sub"]);
    let out = cli.zone(&["check-zone", "chk.test"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("error: ns.sub.chk.test.: a name server inside the zone with no A or AAAA"),
        "{text}"
    );
    cli.ok(&["add-record", "chk.test", "ns.sub", "A", "192.0.2.54"]);
    cli.ok(&["add-record", "chk.test", "www.sub", "A", "192.0.2.55"]);
    let out = cli.ok(&["check-zone", "chk.test"]);
    assert!(
        out.contains("warning: www.sub.chk.test.: occluded"),
        "{out}"
    );
    assert!(out.contains("0 errors, 1 warnings"), "{out}");
    cli.drop_db();
}

#[test]
fn set_notify_writes_the_zone_settings_document() {
    let cli = Cli::new("zonecli_notify");
    cli.ok(&["create-zone", "notify.test", "--ns", "ns1.example.net."]);
    let zone: dns::Name = "notify.test.".parse().unwrap();
    let settings = || block_on(cli.db.store.zone_settings(&zone)).unwrap();
    assert_eq!(settings(), None);
    let gen = |out: &str| {
        let n = out.rsplit("generation ").next().unwrap();
        n.trim().trim_end_matches(')').parse::<i64>().unwrap()
    };
    let out = cli.ok(&[
        "set-notify",
        "notify.test",
        "192.0.2.1",
        "[2001:db8::1]:5300,key=k",
    ]);
    assert!(out.contains("192.0.2.1 [2001:db8::1]:5300,key=k"), "{out}");
    let listed = vec![
        "192.0.2.1".to_string(),
        "[2001:db8::1]:5300,key=k".to_string(),
    ];
    assert_eq!(settings().unwrap().notify, Some(listed));
    // Each change takes a generation of the zone: servers re-read it.
    let first = gen(&out);
    let zone_gen = block_on(cli.db.store.find_zone(&zone))
        .unwrap()
        .unwrap()
        .gen;
    assert_eq!(zone_gen, first);
    let out = cli.ok(&["set-notify", "notify.test"]);
    assert!(out.contains("nobody"), "{out}");
    assert!(gen(&out) > first);
    assert_eq!(settings().unwrap().notify, Some(Vec::new()));
    let out = cli.ok(&["set-notify", "notify.test", "--defaults"]);
    assert!(out.contains("--notify list"), "{out}");
    assert_eq!(settings().unwrap().notify, None);
    let e = cli.fails(2, &["set-notify", "notify.test", "nowhere"]);
    assert!(e.contains("ADDR[:PORT]"), "{e}");
    let e = cli.fails(2, &["set-notify", "notify.test", "192.0.2.1,port=5"]);
    assert!(e.contains("ADDR[:PORT]"), "{e}");
    let e = cli.fails(1, &["set-notify", "absent.test", "192.0.2.1"]);
    assert!(e.contains("absent.test"), "{e}");
    cli.drop_db();
}
