//! The scenario's own DNS probe: one query at a time to the server under
//! test, to know when it is up and how fresh its answers are.
//!
//! ```text
//!  ask(name, type) ─► one UDP query ─► (rcode, answers) | None after 1 s
//!  wait_ready ─► ask the big zone's SOA every 200 ms until answered (90 s)
//!  probe_freshness: per sample name ─► node in the database? (t0)
//!                   ─► ask every 10 ms ─► answered: delay = now − t0
//! ```

use super::children::Children;
use super::scrape::tail;
use super::BIG_APEX;
use crate::perf::{self, QueryOptions};
use crate::zonegen;
use backend_mongo::Store;
use dns::{Name, RType, ZoneInfo};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Freshness of the steady import's records.
#[derive(Clone, Debug, Default)]
pub struct Freshness {
    /// Samples asked for.
    pub samples: usize,
    /// Delays (seconds) from "the record is in the database" to "the
    /// server answers it", one per sample measured.
    pub delays: Vec<f64>,
}

impl Freshness {
    fn sorted(&self) -> Vec<f64> {
        let mut d = self.delays.clone();
        d.sort_by(f64::total_cmp);
        d
    }

    /// Median delay (seconds), when measured.
    pub fn median(&self) -> Option<f64> {
        let d = self.sorted();
        (!d.is_empty()).then(|| d[d.len() / 2])
    }

    /// Largest delay (seconds), when measured.
    pub fn max(&self) -> Option<f64> {
        self.sorted().last().copied()
    }
}

/// Sends one query and returns (rcode, answers), or None on timeout.
pub(super) async fn ask(server: SocketAddr, name: &Name, rtype: RType) -> Option<(u8, u16)> {
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse().ok()?
    } else {
        "[::]:0".parse().ok()?
    };
    let socket = tokio::net::UdpSocket::bind(bind).await.ok()?;
    let (mut q, _) = perf::build_query(name, rtype, QueryOptions::default());
    let id: u16 = rand_id();
    q[..2].copy_from_slice(&id.to_be_bytes());
    socket.send_to(&q, server).await.ok()?;
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1000);
    loop {
        let r = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await;
        let (n, _) = r.ok()?.ok()?;
        if n >= 12 && buf[..2] == id.to_be_bytes() && buf[2] & 0x80 != 0 {
            return Some((buf[3] & 0x0f, u16::from_be_bytes([buf[6], buf[7]])));
        }
    }
}

/// A query id (or run tag) that differs from run to run.
pub(super) fn rand_id() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    zonegen::hash(t, u64::from(std::process::id())) as u16
}

/// Waits until the server answers the big zone's SOA.
pub(super) async fn wait_ready(
    server: SocketAddr,
    children: &mut Children,
    i: usize,
    log_file: &Path,
) -> Result<(), String> {
    let apex: Name = BIG_APEX.parse().map_err(|e| format!("{e}"))?;
    let until = Instant::now() + Duration::from_secs(90);
    while Instant::now() < until {
        if let Some(s) = children.exited(i) {
            return Err(format!(
                "mongodns-server exited ({s}):\n{}",
                tail(log_file, 10)
            ));
        }
        if let Some((0, n)) = ask(server, &apex, RType::SOA).await {
            if n > 0 {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(format!(
        "mongodns-server did not answer {BIG_APEX} SOA on {server} within 90 s:\n{}",
        tail(log_file, 10)
    ))
}

/// Waits until the server's log holds `text` (e.g. "zone resident"), up
/// to 15 minutes; an error when the server exits or the time runs out.
pub(super) async fn wait_log(
    text: &str,
    children: &mut Children,
    i: usize,
    log_file: &Path,
) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(900) {
        if let Some(s) = children.exited(i) {
            return Err(format!(
                "mongodns-server exited ({s}):\n{}",
                tail(log_file, 10)
            ));
        }
        let log = std::fs::read_to_string(log_file).unwrap_or_default();
        if log.contains(text) {
            super::log(format!(
                "server log says {text:?} after {:.1} s; starting the clients",
                started.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!(
        "the server's log did not say {text:?} within 15 minutes"
    ))
}

/// The freshness probe: for each sample name of the steady import, notes
/// when its node is in the database (in the version the zone serves, read
/// again every 200 ms while a name is not found, since `secure-zone`
/// switches versions), then asks the server every 10 ms
/// until it is answered. `asked` must already hold NXDOMAIN for each (the
/// caller asked before the import started).
pub(super) async fn probe_freshness(
    store: Store,
    zone: ZoneInfo,
    server: SocketAddr,
    names: Vec<Name>,
    stop: Arc<AtomicBool>,
) -> Freshness {
    let mut result = Freshness {
        samples: names.len(),
        delays: Vec::new(),
    };
    // Index of the next sample not yet seen in the database (the importer
    // writes in file order, so they appear in this order).
    let mut next_db = 0;
    let mut seen: Vec<Option<Instant>> = vec![None; names.len()];
    let mut done = vec![false; names.len()];
    let mut zone = zone;
    let mut zone_read = Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) || done.iter().all(|d| *d) {
            break;
        }
        if next_db < names.len() {
            match store.get_node(&zone, &names[next_db]).await {
                Ok(Some(_)) => {
                    seen[next_db] = Some(Instant::now());
                    next_db += 1;
                }
                // Not in the version read: every 200 ms, the version the
                // zone serves now (secure-zone switches to a new one).
                _ if zone_read.elapsed() >= Duration::from_millis(200) => {
                    if let Ok(Some(now)) = store.find_zone(&zone.apex).await {
                        zone = now;
                    }
                    zone_read = Instant::now();
                }
                _ => {}
            }
        }
        for k in 0..names.len() {
            let Some(at) = seen[k] else { continue };
            if done[k] {
                continue;
            }
            if let Some((0, n)) = ask(server, &names[k], RType::A).await {
                if n > 0 {
                    result.delays.push(at.elapsed().as_secs_f64());
                    done[k] = true;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    result
}
