//! A TCP relay between the server and the test database, which the test
//! can cut, freeze, slow down or listen to.
//!
//! ```text
//!  server ─► Relay (127.0.0.1:port) ─► database_uri()'s host
//!     client → database: frozen?, held while a request matches
//!                        (hold_requests), a copy kept (tapping_database)
//!     database → client: frozen?, held `slow` ms per read
//!  cut(): connections shut, new ones refused;  restore(): accepted again
//! ```
//!
//! Cut is what a network partition or a stopped `mongod` looks like from
//! the server; frozen is a SIGSTOPped database (bytes held, connections
//! open); slow is a database busy but alive.

use backend_mongo::testing::database_uri;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A relay in front of the test database (see the module doc).
pub struct Relay {
    /// The loopback port it listens on.
    pub port: u16,
    links: Links,
}

/// What the relay's threads share with the test.
#[derive(Clone, Default)]
struct Links {
    down: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    delay_ms: Arc<AtomicU64>,
    keep_sent: bool,
    sent: Arc<Mutex<Vec<u8>>>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    hold: Arc<Mutex<Option<RequestFilter>>>,
    held: Arc<AtomicU64>,
}

/// Which requests to the database [`Relay::hold_requests`] holds back.
pub(crate) type RequestFilter = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

impl Relay {
    /// Starts a relay to the test database ([`database_uri`]'s host).
    pub fn to_database() -> Relay {
        Self::start(false)
    }

    /// As [`Relay::to_database`], keeping a copy of what is sent
    /// ([`Relay::sent`]).
    pub fn tapping_database() -> Relay {
        Self::start(true)
    }

    fn start(keep_sent: bool) -> Relay {
        let target = host_port(&database_uri());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let links = Links {
            keep_sent,
            ..Links::default()
        };
        let shared = links.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                shared.connect(client, &target);
            }
        });
        Relay { port, links }
    }

    /// A URI of the database through the relay.
    pub fn uri(&self) -> String {
        format!("mongodb://127.0.0.1:{}/?directConnection=true", self.port)
    }

    /// Cuts every connection and refuses new ones.
    pub fn cut(&self) {
        self.links.down.store(true, Ordering::SeqCst);
        for s in self.links.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Accepts connections again after [`Relay::cut`].
    pub fn restore(&self) {
        self.links.down.store(false, Ordering::SeqCst);
    }

    /// Holds (true) or lets through (false) every byte, connections open.
    pub fn freeze(&self, frozen: bool) {
        self.links.frozen.store(frozen, Ordering::SeqCst);
    }

    /// Holds every reply from the database for `ms` milliseconds.
    pub fn slow(&self, ms: u64) {
        self.links.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Holds back, on their connection, the requests for which `matches`
    /// is true (judged on each read from the client, which holds a whole
    /// command as the driver writes one), until [`Relay::release`]; other
    /// connections go on.
    pub fn hold_requests(&self, matches: impl Fn(&[u8]) -> bool + Send + Sync + 'static) {
        *self.links.hold.lock().unwrap() = Some(Arc::new(matches));
    }

    /// Lets the requests held by [`Relay::hold_requests`] through.
    pub fn release(&self) {
        *self.links.hold.lock().unwrap() = None;
    }

    /// How many requests [`Relay::hold_requests`] has held back so far.
    pub fn held(&self) -> u64 {
        self.links.held.load(Ordering::SeqCst)
    }

    /// A copy of every byte the clients have sent to the database (empty
    /// unless started with [`Relay::tapping_database`]).
    pub fn sent(&self) -> Vec<u8> {
        self.links.sent.lock().unwrap().clone()
    }
}

impl Links {
    /// Links `client` to a new connection to `target`, or shuts it when
    /// the relay is cut or the database cannot be reached.
    fn connect(&self, client: TcpStream, target: &str) {
        let database = match self.down.load(Ordering::SeqCst) {
            false => TcpStream::connect(target).ok(),
            true => None,
        };
        let Some(database) = database else {
            let _ = client.shutdown(Shutdown::Both);
            return;
        };
        let mut held = self.streams.lock().unwrap();
        held.push(client.try_clone().unwrap());
        held.push(database.try_clone().unwrap());
        let up = client.try_clone().unwrap();
        self.pump(up, database.try_clone().unwrap(), true);
        self.pump(database, client, false);
    }

    /// Copies `from` to `to` on a thread of its own; `to_database` says
    /// which way (a copy kept, or replies held while slow).
    fn pump(&self, mut from: TcpStream, mut to: TcpStream, to_database: bool) {
        let links = self.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                links.hold(to_database);
                if to_database {
                    links.hold_if_matching(&buf[..n]);
                }
                if to_database && links.keep_sent {
                    links.sent.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(Shutdown::Both);
        });
    }

    /// Waits as the relay's state says before bytes are passed on.
    fn hold(&self, to_database: bool) {
        let ms = self.delay_ms.load(Ordering::SeqCst);
        if !to_database && ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
        while self.frozen.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Links {
    /// Waits while `request` matches the filter of [`Relay::hold_requests`].
    fn hold_if_matching(&self, request: &[u8]) {
        let matching = || {
            let filter = self.hold.lock().unwrap().clone();
            filter.is_some_and(|f| f(request))
        };
        if !matching() {
            return;
        }
        self.held.fetch_add(1, Ordering::SeqCst);
        while matching() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The `host:port` of a `mongodb://` URI's first host.
fn host_port(uri: &str) -> String {
    let rest = uri.split("://").nth(1).unwrap();
    let rest = rest.rsplit('@').next().unwrap();
    rest.split(['/', '?', ',']).next().unwrap().to_string()
}

/// The BSON documents of the `command` commands on `collection` found in
/// `sent` (a [`Relay::sent`] copy): each starts with `command: "<collection>"`,
/// as the driver writes a command's name first.
pub fn sent_commands(sent: &[u8], command: &str, collection: &str) -> Vec<Vec<u8>> {
    let mut pattern = vec![0x02];
    pattern.extend_from_slice(command.as_bytes());
    pattern.push(0);
    pattern.extend_from_slice(&(collection.len() as i32 + 1).to_le_bytes());
    pattern.extend_from_slice(collection.as_bytes());
    pattern.push(0);
    let mut out = Vec::new();
    for at in 4..sent.len().saturating_sub(pattern.len()) {
        if sent[at..at + pattern.len()] != pattern[..] {
            continue;
        }
        let len = i32::from_le_bytes(sent[at - 4..at].try_into().unwrap());
        let end = (at - 4).saturating_add(len.max(0) as usize).min(sent.len());
        out.push(sent[at - 4..end].to_vec());
    }
    out
}

/// True when the BSON document `doc` holds the key `key` (at any depth).
pub fn bson_has_key(doc: &[u8], key: &str) -> bool {
    let mut name = key.as_bytes().to_vec();
    name.push(0);
    doc.windows(name.len() + 1)
        .any(|w| w[1..] == name[..] && matches!(w[0], 0x01..=0x13))
}

/// True when `request` (bytes to the database, as [`Relay::hold_requests`]
/// judges them) holds a `getMore` on `collection`: the next batch of a
/// cursor.
pub fn is_get_more(request: &[u8], collection: &str) -> bool {
    let mut named = b"\x02collection\x00".to_vec();
    named.extend_from_slice(&(collection.len() as i32 + 1).to_le_bytes());
    named.extend_from_slice(collection.as_bytes());
    named.push(0);
    let has = |p: &[u8]| request.windows(p.len()).any(|w| w == p);
    has(b"\x12getMore\x00") && has(&named)
}
