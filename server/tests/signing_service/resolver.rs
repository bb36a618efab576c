//! Unbound from Debian as the validating resolver: a trust anchor for the
//! parent zone only, both zones reached through stub zones on the server.
//!
//! ```text
//!  Unbound::start(dir, server port, anchor) ─► unbound -d -c unbound.conf
//!  Unbound::ask(name, type) ─► (rcode, AD) of a DO=1 query
//! ```

use mongodns_testkit::{build_query, free_port, udp_exchange};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Unbound, killed on drop.
pub struct Unbound {
    child: Child,
    pub port: u16,
}

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Unbound {
    /// Starts Unbound validating below `anchor` (a DNSKEY line of the
    /// parent's KSK), with `zones` answered by the server on `server`.
    pub fn start(dir: &Path, server: u16, zones: &[&str], anchor: &str) -> Unbound {
        let port = free_port();
        let mut conf = format!(
            "server:\n  interface: 127.0.0.1\n  port: {port}\n  do-daemonize: no\n  \
             username: \"\"\n  chroot: \"\"\n  directory: \"{dir}\"\n  pidfile: \"{dir}/unbound.pid\"\n  \
             use-syslog: no\n  logfile: \"{dir}/unbound.log\"\n  verbosity: 1\n  val-log-level: 2\n  \
             do-not-query-localhost: no\n  module-config: \"validator iterator\"\n  \
             access-control: 127.0.0.0/8 allow\n  prefetch: no\n  qname-minimisation: no\n  \
             trust-anchor: \"{anchor}\"\n",
            dir = dir.display()
        );
        for z in zones {
            conf.push_str(&format!(
                "stub-zone:\n  name: \"{z}\"\n  stub-addr: 127.0.0.1@{server}\n"
            ));
        }
        let path = dir.join("unbound.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new("unbound")
            .args(["-d", "-c"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("unbound is needed (Debian package unbound)");
        let u = Unbound { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while u.ask(zones[0], 6).is_none() {
            assert!(
                Instant::now() < deadline,
                "unbound did not answer within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        u
    }

    /// The rcode and the AD bit of the answer to a DO=1 query, recursion
    /// desired; `None` without an answer within 3 s.
    pub fn ask(&self, name: &str, qtype: u16) -> Option<(u8, bool)> {
        let q = build_query(0x5151, name, qtype, Some((1232, true)), true);
        let r = udp_exchange(self.port, &q, Duration::from_secs(3))?;
        Some((r[3] & 0x0f, r[3] & 0x20 != 0))
    }

    /// The log's lines about validation failures.
    pub fn bogus_log(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("unbound.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("validation failure") || l.contains("bogus"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
