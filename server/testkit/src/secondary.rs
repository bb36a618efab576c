//! Knot DNS and NSD as secondaries of a `mongodns-server`, each with its
//! own configuration in a temporary directory.
//!
//! ```text
//!  Secondary::knot / ::nsd(dir, port, primary port, zones, key)
//!     ─► DIR/<kind>/<kind>.conf: the primary as the only master, NOTIFY
//!        accepted from 127.0.0.1 (with the key when given), IXFR asked
//!        (the whole zone when the primary has no diff), AXFR out to
//!        127.0.0.1 (to read its copy back), refresh a day
//!        (only a NOTIFY explains a quick update) ─► started, log in DIR
//!     ─► ready when it serves every zone (its first AXFR done)
//!  serial(zone) ─► its SOA serial; wait_serial ─► how long until it serves one
//!  drop ─► killed
//! ```

use crate::udp_exchange;
use hickory_proto::op::Message;
use hickory_proto::rr::RData;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A TSIG key both sides know: name and base64 secret (hmac-sha256).
#[derive(Clone, Debug)]
pub struct SharedKey {
    /// The key's name, e.g. `notify-key.`.
    pub name: String,
    /// Its secret, base64.
    pub secret: String,
}

impl SharedKey {
    /// The key as `--tsig-key` takes it.
    pub fn flag(&self) -> String {
        format!("hmac-sha256:{}:{}", self.name, self.secret)
    }
}

/// The TSIG key a secondary shares with its primary, if any.
pub type Keyed<'a> = Option<&'a SharedKey>;

/// How a secondary is wired to its primary: where it serves, the
/// primary's port, its zones and the key they share.
struct Wiring<'a> {
    port: u16,
    primary: u16,
    zones: &'a [&'a str],
    key: Keyed<'a>,
}

/// Which secondary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondaryKind {
    /// Knot DNS (`knotd`).
    Knot,
    /// NSD (`nsd`).
    Nsd,
}

/// A running secondary, killed on drop.
pub struct Secondary {
    child: Child,
    /// Which server it is.
    pub kind: SecondaryKind,
    /// The port it serves on (UDP and TCP).
    pub port: u16,
    /// Its log file.
    pub log: PathBuf,
}

impl Secondary {
    /// Knot on `port` (from [`crate::free_port`], chosen before the
    /// primary starts, which needs it for `--notify`) as a secondary of
    /// the primary on `primary`, for `zones`.
    pub fn knot(dir: &Path, port: u16, primary: u16, zones: &[&str], key: Keyed) -> Secondary {
        Self::start(SecondaryKind::Knot, dir, port, primary, zones, key)
    }

    /// NSD on `port` as a secondary of the primary on `primary`, for `zones`.
    pub fn nsd(dir: &Path, port: u16, primary: u16, zones: &[&str], key: Keyed) -> Secondary {
        Self::start(SecondaryKind::Nsd, dir, port, primary, zones, key)
    }

    /// Writes its configuration in DIR/kind and starts it.
    fn start(
        kind: SecondaryKind,
        dir: &Path,
        port: u16,
        primary: u16,
        zones: &[&str],
        key: Keyed,
    ) -> Secondary {
        let wiring = Wiring {
            port,
            primary,
            zones,
            key,
        };
        let (name, program, flags): (_, _, &[&str]) = match kind {
            SecondaryKind::Knot => ("knot", "knotd", &["-c"]),
            SecondaryKind::Nsd => ("nsd", "nsd", &["-d", "-c"]),
        };
        let conf = match kind {
            SecondaryKind::Knot => knot_conf,
            SecondaryKind::Nsd => nsd_conf,
        };
        let dir = dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{name}.conf"));
        std::fs::write(&file, conf(&dir, &wiring)).unwrap();
        let mut cmd = Command::new(program);
        cmd.args(flags).arg(&file);
        Self::spawn(kind, cmd, &dir, port, zones)
    }

    fn spawn(
        kind: SecondaryKind,
        mut cmd: Command,
        dir: &Path,
        port: u16,
        zones: &[&str],
    ) -> Secondary {
        let log = dir.join("log");
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::from(File::create(&log).unwrap()))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {kind:?} (apt-get install knot nsd): {e}"));
        let me = Secondary {
            child,
            kind,
            port,
            log,
        };
        for zone in zones {
            let started = Instant::now();
            while me.serial(zone).is_none() {
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "{kind:?} did not load {zone} in 30 s: {}",
                    me.log_text()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        me
    }

    /// The serial of `zone`'s SOA as this secondary serves it.
    pub fn serial(&self, zone: &str) -> Option<u32> {
        soa_serial(self.port, zone)
    }

    /// Waits (at most `limit`) until it serves `zone` at serial `serial`
    /// or later (RFC 1982 arithmetic is not needed for test serials);
    /// returns how long that took, `None` if it did not.
    pub fn wait_serial(&self, zone: &str, serial: u32, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.serial(zone).is_some_and(|s| s >= serial) {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Secondary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SOA serial of `zone` served on `port` (an authoritative answer).
pub fn soa_serial(port: u16, zone: &str) -> Option<u32> {
    let q = crate::build_query(0x5150, zone, 6, None, false);
    let raw = udp_exchange(port, &q, Duration::from_millis(500))?;
    let m = Message::from_vec(&raw).ok()?;
    m.answers.iter().find_map(|r| match &r.data {
        RData::SOA(soa) => Some(soa.serial),
        _ => None,
    })
}

fn knot_conf(dir: &Path, w: &Wiring) -> String {
    let (port, primary, zones, key) = (w.port, w.primary, w.zones, w.key);
    let d = dir.display();
    let mut c = format!(
        "server:\n    listen: 127.0.0.1@{port}\n    rundir: \"{d}\"\n\
         database:\n    storage: \"{d}\"\n\
         log:\n  - target: stderr\n    any: info\n"
    );
    let key_line = match key {
        Some(k) => {
            c += &format!(
                "key:\n  - id: {}\n    algorithm: hmac-sha256\n    secret: {}\n",
                k.name, k.secret
            );
            format!("    key: {}\n", k.name)
        }
        None => String::new(),
    };
    c += &format!("remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n{key_line}");
    c += &format!("acl:\n  - id: notify\n    address: 127.0.0.1\n    action: notify\n{key_line}");
    // Tests read the secondary's copy back by AXFR.
    c += "  - id: readback\n    address: 127.0.0.1\n    action: transfer\n";
    c += "zone:\n";
    for zone in zones {
        c += &format!(
            "  - domain: {zone}\n    master: primary\n    acl: [notify, readback]\n    file: \"{d}/{zone}zone\"\n\
             \x20   refresh-min-interval: 86400\n    zonefile-sync: -1\n    journal-content: none\n"
        );
    }
    c
}

fn nsd_conf(dir: &Path, w: &Wiring) -> String {
    let (port, primary, zones, key) = (w.port, w.primary, w.zones, w.key);
    let d = dir.display();
    let mut c = format!(
        "server:\n    ip-address: 127.0.0.1@{port}\n    server-count: 1\n    username: \"\"\n\
         \x20   chroot: \"\"\n    zonesdir: \"{d}\"\n    database: \"\"\n    pidfile: \"{d}/nsd.pid\"\n\
         \x20   xfrdfile: \"{d}/xfrd.state\"\n    zonelistfile: \"{d}/zone.list\"\n\
         \x20   rrl-ratelimit: 0\n    verbosity: 2\n    xfrd-reload-timeout: 0\n\
         remote-control:\n    control-enable: no\n"
    );
    let key_name = match key {
        Some(k) => {
            c += &format!(
                "key:\n    name: {}\n    algorithm: hmac-sha256\n    secret: \"{}\"\n",
                k.name, k.secret
            );
            k.name.clone()
        }
        None => "NOKEY".to_string(),
    };
    for zone in zones {
        c += &format!(
            "zone:\n    name: {zone}\n    zonefile: \"{zone}zone\"\n\
             \x20   allow-notify: 127.0.0.1 {key_name}\n    request-xfr: 127.0.0.1@{primary} {key_name}\n\
             \x20   provide-xfr: 127.0.0.1 NOKEY\n"
        );
    }
    c
}
