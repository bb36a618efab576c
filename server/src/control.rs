//! The control endpoint: counters and cache purges over plain HTTP.
//!
//! ```text
//!  GET  /stats                      counters as JSON
//!  GET  /metrics                    the same, Prometheus text format
//!  POST /purge                      drop every cached reply and node
//!  POST /purge?name=www.example.com drop one name (any type, any zone)
//!  POST /purge?zone=example.com     drop one zone's answers
//! ```
//!
//! Off by default (`--control-listen`); bind it to loopback or a management
//! network only: it has no authentication.

use crate::cache::{Counters, PacketCache, RecordCache, ZoneRegistry, DB_LATENCY_BUCKETS_US};
use backend_mongo::{Name, Store};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the control endpoint can see and purge.
pub struct Control {
    /// The packet cache.
    pub packets: Arc<PacketCache>,
    /// The record cache.
    pub records: Arc<RecordCache<Store>>,
    /// Zone generations.
    pub registry: Arc<ZoneRegistry>,
    /// Shared counters.
    pub counters: Arc<Counters>,
}

impl Control {
    /// Every counter as (name, help, value).
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
        let c = &self.counters;
        let p = &self.packets.stats;
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        vec![
            (
                "packet_cache_hits",
                "replies served from the packet cache",
                l(&p.hits),
            ),
            (
                "packet_cache_misses",
                "cacheable queries not in the packet cache",
                l(&p.misses),
            ),
            (
                "packet_cache_uncacheable",
                "queries of a shape the packet cache skips",
                l(&p.uncacheable),
            ),
            (
                "packet_cache_evictions",
                "replies evicted to stay within bounds",
                self.packets.evictions(),
            ),
            (
                "packet_cache_entries",
                "replies held",
                self.packets.len() as u64,
            ),
            (
                "packet_cache_bytes",
                "approximate bytes held by the packet cache",
                self.packets.bytes() as u64,
            ),
            (
                "record_cache_hits",
                "node lookups served from the record cache",
                l(&c.record_hits),
            ),
            (
                "record_cache_misses",
                "node lookups that needed the database",
                l(&c.record_misses),
            ),
            (
                "record_cache_evictions",
                "nodes evicted to stay within bounds",
                self.records.evictions(),
            ),
            (
                "record_cache_entries",
                "nodes held",
                self.records.len() as u64,
            ),
            (
                "zone_cache_hits",
                "zone lookups served from memory",
                l(&c.zone_hits),
            ),
            (
                "zone_cache_misses",
                "zone lookups that needed the database",
                l(&c.zone_misses),
            ),
            (
                "zones_known",
                "zones in the registry",
                self.registry.len() as u64,
            ),
            (
                "zone_changes",
                "zone changes noticed by polling",
                l(&c.zone_changes),
            ),
            ("db_queries", "database round trips", l(&c.db_queries)),
            (
                "db_errors",
                "database round trips that failed",
                l(&c.db_errors),
            ),
            (
                "db_latency_us_sum",
                "total database latency in microseconds",
                l(&c.db_latency_us),
            ),
            ("db_inflight", "database reads in flight", l(&c.db_inflight)),
            (
                "pipeline_queries",
                "queries answered by the full pipeline",
                l(&c.pipeline_queries),
            ),
            (
                "stale_replies",
                "expired replies served because the database failed (serve-stale)",
                l(&self.packets.stats.stale_hits),
            ),
            (
                "stale_nodes",
                "expired records used because the database failed (serve-stale)",
                l(&c.stale_nodes),
            ),
            (
                "freshness_lag_ms",
                "milliseconds since the last successful change poll",
                self.registry
                    .poll_age()
                    .map_or(u64::MAX, |d| d.as_millis() as u64),
            ),
        ]
    }

    fn json(&self) -> String {
        let mut out = String::from("{");
        for (i, (name, _, value)) in self.snapshot().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{name}\":{value}");
        }
        out.push('}');
        out
    }

    fn prometheus(&self) -> String {
        let mut out = String::new();
        for (name, help, value) in self.snapshot() {
            let _ = writeln!(out, "# HELP mongodns_{name} {help}\n# TYPE mongodns_{name} gauge\nmongodns_{name} {value}");
        }
        let _ = writeln!(
            out,
            "# HELP mongodns_db_latency_seconds database round-trip latency\n# TYPE mongodns_db_latency_seconds histogram"
        );
        let mut cumulative = 0;
        for (i, bound) in DB_LATENCY_BUCKETS_US.iter().enumerate() {
            cumulative += self.counters.db_latency_buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "mongodns_db_latency_seconds_bucket{{le=\"{}\"}} {cumulative}",
                *bound as f64 / 1e6
            );
        }
        cumulative +=
            self.counters.db_latency_buckets[DB_LATENCY_BUCKETS_US.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "mongodns_db_latency_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let sum = self.counters.db_latency_us.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "mongodns_db_latency_seconds_sum {sum}\nmongodns_db_latency_seconds_count {cumulative}"
        );
        out
    }

    /// Purges by name, by zone, or everything; returns a JSON summary.
    pub fn purge(&self, name: Option<&str>, zone: Option<&str>) -> Result<String, String> {
        match (name, zone) {
            (Some(n), None) => {
                let name: Name = n.parse().map_err(|e| format!("bad name {n:?}: {e}"))?;
                let replies = self.packets.purge_name(name.as_wire());
                let nodes = self.records.purge_name(&name);
                Ok(format!(
                    "{{\"purged_replies\":{replies},\"purged_nodes\":{nodes}}}"
                ))
            }
            (None, Some(z)) => {
                let apex: Name = z.parse().map_err(|e| format!("bad zone {z:?}: {e}"))?;
                if self.registry.purge_zone(&apex) {
                    Ok("{\"purged_zone\":true}".into())
                } else {
                    Ok("{\"purged_zone\":false,\"note\":\"zone not cached\"}".into())
                }
            }
            (None, None) => {
                let replies = self.packets.purge_all();
                let nodes = self.records.purge_all();
                Ok(format!(
                    "{{\"purged_replies\":{replies},\"purged_nodes\":{nodes}}}"
                ))
            }
            (Some(_), Some(_)) => Err("give name= or zone=, not both".into()),
        }
    }
}

/// Serves the control endpoint on `addr` until the task is dropped.
pub async fn serve_control(addr: SocketAddr, control: Arc<Control>) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "control endpoint (stats, metrics, purge)");
    loop {
        let (stream, _) = listener.accept().await?;
        let control = control.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), handle(stream, control)).await;
        });
    }
}

fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

async fn handle(mut stream: TcpStream, control: Arc<Control>) -> std::io::Result<()> {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") && len < buf.len() {
        let n = stream.read(&mut buf[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let mut parts = head.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, content_type, body) = match (method, path) {
        ("GET", "/stats") => ("200 OK", "application/json", control.json()),
        ("GET", "/metrics") => ("200 OK", "text/plain; version=0.0.4", control.prometheus()),
        ("POST", "/purge") => {
            match control.purge(query_param(query, "name"), query_param(query, "zone")) {
                Ok(body) => ("200 OK", "application/json", body),
                Err(e) => ("400 Bad Request", "text/plain", e),
            }
        }
        (_, "/stats" | "/metrics" | "/purge") => (
            "405 Method Not Allowed",
            "text/plain",
            "method not allowed\n".into(),
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            "not found: try /stats, /metrics, POST /purge\n".into(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
