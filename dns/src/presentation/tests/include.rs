//! `$INCLUDE`: relative paths, the state restored after the included
//! file, its errors, and what it may read.
//!
//! ```text
//!  zone ─► $INCLUDE file [origin] ─► records, then $ORIGIN/$TTL as before
//!  a path outside the allowed directories, a FIFO, a device ─► refused
//! ```

use super::*;

#[test]
fn include_follows_relative_paths_and_restores_state() {
    let dir = TempDir::new();
    dir.write(
        "sub/hosts.inc",
        "host A 192.0.2.2\n$ORIGIN changed.example.com.\nx A 192.0.2.3\n$INCLUDE nested.inc\n",
    );
    dir.write("sub/nested.inc", "\n\nn 5m A 192.0.2.4\n");
    // Starts with a blank owner: the includer's previous owner.
    dir.write("sub/blank.inc", "  TXT inherited\n");
    dir.write(
        "main.zone",
        "$ORIGIN example.com.\n$TTL 300\nwww A 192.0.2.1\n$INCLUDE sub/hosts.inc sub\n  TXT \"owner restored\"\nafter A 192.0.2.9 ; origin restored\n$INCLUDE \"sub/nested.inc\"\n$INCLUDE sub/blank.inc\n",
    );
    let main = dir.path("main.zone");
    let records: Vec<Record> = ZoneFileReader::open(&main, Name::root(), None)
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let summary: Vec<(String, String, usize, u32)> = records
        .iter()
        .map(|r| {
            let file = r.location.file.strip_prefix(&dir.0).unwrap();
            (
                r.owner.to_string(),
                file.display().to_string(),
                r.location.line,
                r.ttl,
            )
        })
        .collect();
    let expect = [
        ("www.example.com.", "main.zone", 3, 300),
        ("host.sub.example.com.", "sub/hosts.inc", 1, 300),
        ("x.changed.example.com.", "sub/hosts.inc", 3, 300),
        ("n.changed.example.com.", "sub/nested.inc", 3, 300),
        ("www.example.com.", "main.zone", 5, 300),
        ("after.example.com.", "main.zone", 6, 300),
        ("n.example.com.", "sub/nested.inc", 3, 300),
        ("after.example.com.", "sub/blank.inc", 1, 300),
    ];
    let expect: Vec<(String, String, usize, u32)> = expect
        .iter()
        .map(|(o, f, l, t)| (o.to_string(), f.to_string(), *l, *t))
        .collect();
    assert_eq!(summary, expect);
    assert_eq!(records[4].rtype, RType::TXT);
    // TTL is 300 even after "n 5m": $TTL wins; the explicit one is kept.
    assert_eq!(records[3].ttl, 300);
}

#[test]
fn include_errors() {
    let dir = TempDir::new();
    dir.write("a.inc", "a A 192.0.2.1\n$INCLUDE b.inc\n");
    dir.write("b.inc", "b A 192.0.2.2\n\n$INCLUDE a.inc\nc A 192.0.2.3\n");
    dir.write(
        "missing.zone",
        "x A 192.0.2.1\n$INCLUDE nowhere.inc\ny A 192.0.2.2\n",
    );
    for i in 0..=MAX_INCLUDE_DEPTH + 1 {
        dir.write(&format!("d{i}.inc"), &format!("$INCLUDE d{}.inc\n", i + 1));
    }
    dir.write(
        &format!("d{}.inc", MAX_INCLUDE_DEPTH + 2),
        "deep A 192.0.2.1\n",
    );
    let origin = name("example.com.");
    let run = |file: &str| -> Vec<Result<Record, ParseError>> {
        ZoneFileReader::open(&dir.path(file), origin.clone(), Some(60))
            .unwrap()
            .collect()
    };

    let items = run("a.inc");
    assert_eq!(items.len(), 4);
    let e = items[2].as_ref().unwrap_err();
    assert_eq!((e.file.as_path(), e.line), (dir.path("b.inc").as_path(), 3));
    assert!(e.message.contains("$INCLUDE loop"), "{e}");
    assert_eq!(items[3].as_ref().unwrap().owner, name("c.example.com."));

    let items = run("missing.zone");
    assert_eq!(items.len(), 3);
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("cannot open"), "{e}");

    let items = run("d0.inc");
    assert_eq!(items.len(), 1);
    let e = items[0].as_ref().unwrap_err();
    assert_eq!(e.file, dir.path(&format!("d{MAX_INCLUDE_DEPTH}.inc")));
    assert!(e.message.contains("nested deeper than 16"), "{e}");
    // One level less is fine.
    let items = run("d2.inc");
    assert_eq!(items[0].as_ref().unwrap().owner, name("deep.example.com."));

    let e = ZoneFileReader::open(&dir.path("absent.zone"), origin, None)
        .err()
        .unwrap();
    assert!(e.message.contains("cannot open"));
}

/// The one error of reading `file` in `dir`, which must contain `needle`.
#[track_caller]
fn include_refused(reader: ZoneFileReader, needle: &str) {
    let items: Vec<_> = reader.collect();
    let errors: Vec<&ParseError> = items.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{items:?}");
    assert!(errors[0].message.contains(needle), "{}", errors[0]);
    assert_eq!(errors[0].line, 1, "{}", errors[0]);
    // The records after the refused $INCLUDE are still read.
    assert!(items.iter().any(|r| r
        .as_ref()
        .is_ok_and(|r| r.owner == name("after.example.com."))));
}

#[test]
fn include_reads_only_regular_files_in_allowed_directories() {
    let outside = TempDir::new();
    outside.write("secret.inc", "leak A 192.0.2.66\n");
    let dir = TempDir::new();
    let origin = name("example.com.");
    let zone = |text: &str| {
        dir.write("z.zone", &format!("{text}\nafter A 192.0.2.1\n"));
        ZoneFileReader::open(&dir.path("z.zone"), origin.clone(), Some(60)).unwrap()
    };
    let secret = outside.path("secret.inc");
    // Absolute paths, `..` and symlinks out of the directory.
    include_refused(zone(&format!("$INCLUDE {}", secret.display())), "outside");
    include_refused(zone("$INCLUDE /etc/passwd"), "outside");
    let up = format!(
        "$INCLUDE ../{}/secret.inc",
        outside.0.file_name().unwrap().to_string_lossy()
    );
    include_refused(zone(&up), "outside");
    std::os::unix::fs::symlink(&secret, dir.path("link.inc")).unwrap();
    include_refused(zone("$INCLUDE link.inc"), "outside");
    // Devices, FIFOs and directories are never opened (a FIFO would block).
    std::os::unix::fs::symlink("/dev/zero", dir.path("zero.inc")).unwrap();
    include_refused(zone("$INCLUDE zero.inc"), "not a regular file");
    let fifo = dir.path("fifo.inc");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    include_refused(zone("$INCLUDE fifo.inc"), "not a regular file");
    dir.write("sub/x.inc", "x A 192.0.2.2\n");
    include_refused(zone("$INCLUDE sub"), "not a regular file");
    // A configured directory may be read, absolute or relative to the file.
    let allowed = zone(&format!("$INCLUDE {}", secret.display()))
        .include_from(std::slice::from_ref(&outside.0))
        .unwrap();
    let owners: Vec<Name> = allowed.map(|r| r.unwrap().owner).collect();
    assert_eq!(
        owners,
        vec![name("leak.example.com."), name("after.example.com.")]
    );
    assert!(
        ZoneFileReader::from_reader("x".into(), Box::new(std::io::empty()), origin, None)
            .include_from(&[dir.path("z.zone")])
            .is_err()
    );
}
