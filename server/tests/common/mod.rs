//! Shared test harness: a real database, the real server binary, real sockets.
//!
//! ```text
//!  database_uri(): $MONGODB_URI, else `scripts/dev-mongo start` (FerretDB)
//!  TestZoneDb::new(): a fresh database per test ─► import zones in-process
//!  ServerProcess::start(): the mongodns-server binary on a free port
//!  ask_udp / ask_tcp: hand-built query ─► reply parsed by hickory-proto
//! ```
#![allow(dead_code, unused_imports)]

pub use backend_mongo::testing::{database_uri, repo_root};
use backend_mongo::{Name, Store};
use hickory_proto::op::Message;
use loadtools::import::{import_file, ImportOptions, NoProgress};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A database of its own for one test, dropped when the test ends.
pub struct TestZoneDb {
    /// The database name.
    pub name: String,
    /// The connected store.
    pub store: Store,
    /// Where fixture files are written.
    pub dir: PathBuf,
}

impl TestZoneDb {
    /// Creates an empty database with a unique name.
    pub async fn new(tag: &str) -> TestZoneDb {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("mdt_{}_{}_{}", tag, std::process::id(), n);
        let store = Store::connect(&database_uri(), &name, Duration::from_secs(10))
            .await
            .expect("test database unreachable");
        store.ensure_indexes().await.expect("indexes");
        let dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        TestZoneDb { name, store, dir }
    }

    /// Imports `text` as zone `zone`.
    pub async fn import(
        &self,
        zone: &str,
        text: &str,
        replace: bool,
    ) -> loadtools::import::ImportSummary {
        self.try_import(zone, text, replace)
            .await
            .expect("import failed")
    }

    /// Imports `text` as zone `zone`, returning the error if any.
    pub async fn try_import(
        &self,
        zone: &str,
        text: &str,
        replace: bool,
    ) -> Result<loadtools::import::ImportSummary, loadtools::import::ImportError> {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(format!("zone{n}.txt"));
        std::fs::write(&path, text).unwrap();
        let options = ImportOptions {
            zone: zone.parse::<Name>().unwrap(),
            replace,
            batch_size: 7,
            in_flight: 3,
            grace: Duration::from_millis(0),
        };
        import_file(&self.store, &path, &options, &NoProgress).await
    }

    /// Drops the database.
    pub async fn drop_db(self) {
        let _ = self.store.database().drop().await;
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A running `mongodns-server`, killed on drop.
pub struct ServerProcess {
    child: Child,
    /// The port it serves on (UDP and TCP).
    pub port: u16,
}

fn free_port() -> u16 {
    // A port free for both UDP and TCP at the time of asking.
    loop {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tcp.local_addr().unwrap().port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
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
        let child = Command::new(env!("CARGO_BIN_EXE_mongodns-server"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--mongodb-uri",
                uri,
                "--database",
                database,
                "--workers",
                "2",
            ])
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
    pub fn wait_exit(mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
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

/// Builds a query. `edns` is `(udp size, DO)`.
pub fn build_query(
    id: u16,
    name: &str,
    qtype: u16,
    edns: Option<(u16, bool)>,
    rd: bool,
) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[
        if rd { 1 } else { 0 },
        0,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        if edns.is_some() { 1 } else { 0 },
    ]);
    if name != "." {
        for label in name.trim_end_matches('.').split('.') {
            p.push(label.len() as u8);
            p.extend_from_slice(label.as_bytes());
        }
    }
    p.push(0);
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    if let Some((size, dnssec_ok)) = edns {
        p.push(0);
        p.extend_from_slice(&41u16.to_be_bytes());
        p.extend_from_slice(&size.to_be_bytes());
        p.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
    }
    p
}

/// Sends `query` over UDP and returns the raw reply.
pub fn udp_exchange(port: u16, query: &[u8], timeout: Duration) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(timeout)).unwrap();
    socket.send_to(query, ("127.0.0.1", port)).unwrap();
    let mut buf = vec![0u8; 65535];
    let (len, _) = socket.recv_from(&mut buf).ok()?;
    buf.truncate(len);
    Some(buf)
}

/// Sends `query` over TCP and returns the raw reply.
pub fn tcp_exchange(port: u16, query: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream.write_all(&framed).unwrap();
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).unwrap();
    let mut reply = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut reply).unwrap();
    reply
}

/// Asks over UDP and parses the reply.
pub fn ask_udp(port: u16, name: &str, qtype: u16, edns: Option<(u16, bool)>) -> Message {
    let q = build_query(0x1234, name, qtype, edns, false);
    let raw = udp_exchange(port, &q, Duration::from_secs(5)).expect("no UDP reply");
    Message::from_vec(&raw).expect("reply does not parse")
}

/// Asks over TCP and parses the reply.
pub fn ask_tcp(port: u16, name: &str, qtype: u16, edns: Option<(u16, bool)>) -> Message {
    let q = build_query(0x4321, name, qtype, edns, false);
    Message::from_vec(&tcp_exchange(port, &q)).expect("reply does not parse")
}

/// The records of a section as `owner TTL TYPE rdata` lines, sorted,
/// owner names lower-cased.
pub fn lines(records: &[hickory_proto::rr::Record]) -> Vec<String> {
    let mut out: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.name.to_ascii().to_lowercase(),
                r.ttl,
                r.record_type(),
                r.data
            )
        })
        .collect();
    out.sort();
    out
}

/// Runs an async block on the process-wide test runtime (tests are plain
/// `#[test]`s so the blocking socket helpers can be used freely). One
/// runtime for all: a database client must live on the runtime it was made on.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
        })
        .block_on(f)
}

/// A free TCP port on loopback (for the control endpoint).
pub fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP/1.1 request; returns (status line, body).
pub fn http(port: u16, method: &str, path: &str) -> (String, String) {
    http_as(port, method, path, None)
}

/// [`http`] with `Authorization: Bearer TOKEN` when a token is given.
pub fn http_as(port: u16, method: &str, path: &str, token: Option<&str>) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
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

/// One counter from the control endpoint's `/stats`.
pub fn stat(control_port: u16, name: &str) -> u64 {
    let (_, body) = http(control_port, "GET", "/stats");
    let key = format!("\"{name}\":");
    let at = body
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        + key.len();
    body[at..]
        .split([',', '}'])
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
