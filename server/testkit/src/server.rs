//! A `mongodns-server` process for one test, killed when dropped.
//!
//! ```text
//!  ServerProcess::start(db, flags) ─► binary("mongodns-server") on a free port
//!      ─► polled with a UDP query until it answers (30 s at most)
//!  signal / wait_exit / drop (kill)
//! ```

use crate::{binary, build_query, free_port, free_tcp_port, udp_exchange};
use backend_mongo::testing::database_uri;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running `mongodns-server`, killed on drop.
pub struct ServerProcess {
    child: Child,
    /// The port it serves on (UDP and TCP).
    pub port: u16,
}

impl ServerProcess {
    /// Starts the server on `database` and waits until it answers.
    pub fn start(database: &str, extra: &[&str]) -> ServerProcess {
        Self::start_with_uri(&database_uri(), database, extra)
    }

    /// Starts the server against `uri`, and waits until it answers.
    pub fn start_with_uri(uri: &str, database: &str, extra: &[&str]) -> ServerProcess {
        Self::spawn(uri, database, extra, Stdio::inherit())
    }

    /// As [`ServerProcess::start_with_uri`], its log (stderr) written to `log`.
    pub fn start_logging(uri: &str, database: &str, extra: &[&str], log: &Path) -> ServerProcess {
        let file = std::fs::File::create(log).expect("cannot create the server log");
        Self::spawn(uri, database, extra, Stdio::from(file))
    }

    fn spawn(uri: &str, database: &str, extra: &[&str], stderr: Stdio) -> ServerProcess {
        let port = free_port();
        let child = Command::new(binary("mongodns-server"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--mongodb-uri", uri, "--database", database])
            .args(["--workers", "2"])
            .args(extra)
            .env_remove("MONGODB_URI")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("cannot start mongodns-server");
        let mut server = ServerProcess { child, port };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("mongodns-server exited at start: {status}");
            }
            let q = build_query(0x4242, "ready.invalid.", 1, None, false);
            if udp_exchange(self.port, &q, Duration::from_millis(200)).is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("mongodns-server did not answer within 30 s");
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal (`TERM`, `HUP`, …) with kill(1).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args(["-s", name, &self.child.id().to_string()])
            .status()
            .expect("cannot run kill");
        assert!(status.success(), "kill -s {name} failed");
    }

    /// Waits for the process to exit (it must exit by itself).
    pub fn wait_exit(mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server on `database` with `extra` flags and a control endpoint on
/// a free port: (server, control port).
pub fn start_with_control(database: &str, extra: &[&str]) -> (ServerProcess, u16) {
    let control = free_tcp_port();
    let listen = format!("127.0.0.1:{control}");
    let mut args = vec!["--control-listen", listen.as_str()];
    args.extend_from_slice(extra);
    (ServerProcess::start(database, &args), control)
}

/// As [`start_with_control`], reaching the database at `uri` (a relay).
pub fn start_with_control_uri(uri: &str, database: &str, extra: &[&str]) -> (ServerProcess, u16) {
    let control = free_tcp_port();
    let listen = format!("127.0.0.1:{control}");
    let mut args = vec!["--control-listen", listen.as_str()];
    args.extend_from_slice(extra);
    (ServerProcess::start_with_uri(uri, database, &args), control)
}
