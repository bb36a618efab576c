//! Silent HTTP connections from many loopback source prefixes, kept open
//! by a thread that reconnects each one the server closes (as an attacker
//! filling an HTTP listener's slots would).
//!
//! ```text
//!  SilentFlood::start(port, prefixes, per_prefix)
//!     thread: for each (prefix 127.0.P.1, i): open? peek (0 bytes: closed)
//!             closed or never opened ─► connect from 127.0.P.1, send nothing
//!             (odd i: half a request line), count the reconnect
//!             a pass done ─► passes += 1; 20 ms; again until stopped
//!  next_pass(): waits until the thread has made one more whole pass
//!  stop(): the thread ends, every connection dropped
//! ```

use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A TCP connection from `local` (any 127/8 address works on Linux) to
/// 127.0.0.1:`port`.
pub fn connect_from(local: &str, port: u16) -> std::io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.bind(&format!("{local}:0").parse::<SocketAddr>().unwrap().into())?;
    let server: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    s.connect_timeout(&server.into(), Duration::from_secs(5))?;
    Ok(s.into())
}

/// The flooding thread and what it reports.
pub struct SilentFlood {
    stop: Arc<AtomicBool>,
    passes: Arc<AtomicU64>,
    reconnects: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl SilentFlood {
    /// `per_prefix` silent connections from each 127.0.P.1, P in
    /// `prefixes`, kept open until stopped; returns once the first pass
    /// has opened them (or tried to).
    pub fn start(port: u16, prefixes: std::ops::Range<u8>, per_prefix: usize) -> SilentFlood {
        let sources: Vec<String> = prefixes
            .flat_map(|p| (0..per_prefix).map(move |_| format!("127.0.{p}.1")))
            .collect();
        let mut flood = SilentFlood {
            stop: Arc::new(AtomicBool::new(false)),
            passes: Arc::new(AtomicU64::new(0)),
            reconnects: Arc::new(AtomicU64::new(0)),
            thread: None,
        };
        let (stop, passes, reconnects) = (
            flood.stop.clone(),
            flood.passes.clone(),
            flood.reconnects.clone(),
        );
        flood.thread = Some(std::thread::spawn(move || {
            let mut conns: Vec<Option<TcpStream>> = sources.iter().map(|_| None).collect();
            while !stop.load(Ordering::Relaxed) {
                for (i, source) in sources.iter().enumerate() {
                    keep_open(&mut conns[i], source, port, i % 2 == 1, &reconnects);
                }
                passes.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
        flood.next_pass();
        flood
    }

    /// Waits (at most 30 s) until the thread has made one more whole pass:
    /// every connection it lost is open again, or was tried.
    pub fn next_pass(&self) {
        let target = self.passes.load(Ordering::Relaxed) + 2;
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.passes.load(Ordering::Relaxed) < target {
            assert!(Instant::now() < deadline, "the flood thread is stuck");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the flood, closing every connection; the reconnects made.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("the flood thread panicked");
        }
        self.reconnects.load(Ordering::Relaxed)
    }
}

impl Drop for SilentFlood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `conn` open again if the server closed it: from `source`, sending
/// nothing or (`partial`) half a request line.
fn keep_open(
    conn: &mut Option<TcpStream>,
    source: &str,
    port: u16,
    partial: bool,
    reconnects: &AtomicU64,
) {
    if conn.as_ref().is_some_and(is_open) {
        return;
    }
    *conn = connect_from(source, port).ok().map(|mut s| {
        if partial {
            let _ = s.write_all(b"GET /hea");
        }
        let _ = s.set_nonblocking(true);
        reconnects.fetch_add(1, Ordering::Relaxed);
        s
    });
}

/// Still open as far as the client can tell (no EOF, no reset).
fn is_open(s: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match s.peek(&mut byte) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => e.kind() == ErrorKind::WouldBlock,
    }
}
