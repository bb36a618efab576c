//! The control endpoint: counters and cache purges over plain HTTP.
//!
//! ```text
//!  GET  /stats                      counters as JSON
//!  GET  /metrics                    the same, Prometheus text format, plus
//!                                   queries by transport/type/rcode, query
//!                                   log, kernel UDP drops, job progress
//!  GET  /health                     200 while the database is being polled,
//!                                   503 when the last good poll is too old
//!  POST /purge                      drop every cached reply and node
//!  POST /purge?name=www.example.com drop one name (any type, any zone)
//!  POST /purge?zone=example.com     drop one zone's answers
//! ```
//!
//! Off by default (`--control-listen`); bind it to loopback or a management
//! network only. `POST /purge` needs the `--control-token` (serve.rs); the
//! read-only pages stay open.

mod serve;

pub use serve::{serve_control, ControlLimits};

use crate::cache::{Counters, PacketCache, RecordCache, ZoneRegistry, DB_LATENCY_BUCKETS_US};
use crate::observe::QueryMetrics;
use crate::querylog::{rcode_name, QueryLog};
use backend_mongo::{JobProgress, Name, Store};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

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
    /// Per-query counters (transport, type, rcode), if counted.
    pub queries: Option<Arc<QueryMetrics>>,
    /// The query log, if on.
    pub query_log: Option<Arc<QueryLog>>,
    /// The database, for job progress on `/metrics`.
    pub store: Option<Store>,
    /// `/health` fails when the last good change poll is older than this.
    pub health_max_lag: Duration,
    /// When the server started.
    pub started: std::time::Instant,
}

impl Control {
    /// Every counter as (name, help, value).
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut all = self.cache_snapshot();
        all.extend(crate::guard::GUARD.snapshot());
        all
    }

    fn cache_snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
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
                "record_cache_version_drops",
                "nodes dropped because their zone moved to a new version",
                l(&c.version_drops),
            ),
            (
                "record_cache_entries",
                "nodes held",
                self.records.len() as u64,
            ),
            (
                "denial_cache_hits",
                "DNSSEC denial lookups served from the denial cache",
                l(&c.denial_hits),
            ),
            (
                "denial_cache_misses",
                "DNSSEC denial lookups that needed the database",
                l(&c.denial_misses),
            ),
            (
                "denial_cache_entries",
                "NSEC/NSEC3 records held by the denial cache",
                self.records.denial_len() as u64,
            ),
            (
                "denial_cache_bytes",
                "approximate bytes held by the denial cache",
                self.records.denial_bytes() as u64,
            ),
            (
                "denial_cache_evictions",
                "denial records evicted to stay within bounds",
                self.records.denial_evictions(),
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
                "queries_udp",
                "queries answered over UDP",
                self.queries.as_ref().map_or(0, |q| q.total_for("udp")),
            ),
            (
                "queries_tcp",
                "queries answered over TCP",
                self.queries.as_ref().map_or(0, |q| q.total_for("tcp")),
            ),
            (
                "queries_inflight",
                "queries in the answer pipeline now (cache misses in flight)",
                self.queries
                    .as_ref()
                    .map_or(0, |q| q.inflight.load(Ordering::Relaxed)),
            ),
            (
                "dropped_queries",
                "queries that got no reply (malformed, not a query)",
                self.queries
                    .as_ref()
                    .map_or(0, |q| q.dropped().iter().sum()),
            ),
            (
                "query_log_lines",
                "query log lines written",
                self.query_log.as_ref().map_or(0, |q| l(&q.stats().written)),
            ),
            (
                "query_log_dropped",
                "query log lines dropped because the writer could not keep up",
                self.query_log.as_ref().map_or(0, |q| l(&q.stats().dropped)),
            ),
            (
                "query_log_write_errors",
                "query log lines lost to write errors",
                self.query_log
                    .as_ref()
                    .map_or(0, |q| l(&q.stats().write_errors)),
            ),
            (
                "query_log_rotations",
                "query log files rotated or reopened",
                self.query_log
                    .as_ref()
                    .map_or(0, |q| l(&q.stats().rotations)),
            ),
            (
                "uptime_seconds",
                "seconds since the server started",
                self.started.elapsed().as_secs(),
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
                "db_shed",
                "database reads refused at once because too many were waiting (load shedding)",
                l(&c.db_shed),
            ),
            (
                "query_timeouts",
                "uncached queries that ran out of time (SERVFAIL or stale)",
                l(&c.query_timeouts),
            ),
            (
                "zone_registry_complete",
                "1 when every served zone is in memory (names in no zone cost no database read)",
                u64::from(self.registry.is_complete()),
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

    /// Every job's progress (empty without a database or on error).
    pub async fn jobs(&self) -> Vec<JobProgress> {
        let Some(store) = &self.store else {
            return Vec::new();
        };
        match tokio::time::timeout(Duration::from_secs(1), store.list_progress()).await {
            Ok(Ok(jobs)) => jobs,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "cannot read job progress");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// `/health`: (healthy, explanation).
    pub fn health(&self) -> (bool, String) {
        match self.registry.poll_age() {
            Some(age) if age <= self.health_max_lag => (
                true,
                format!("ok: database polled {} ms ago\n", age.as_millis()),
            ),
            Some(age) => (
                false,
                format!(
                    "unhealthy: last good database poll {} ms ago (limit {} ms)\n",
                    age.as_millis(),
                    self.health_max_lag.as_millis()
                ),
            ),
            None => (false, "unhealthy: database not polled yet\n".into()),
        }
    }

    fn prometheus_extra(&self, out: &mut String, jobs: &[JobProgress]) {
        if let Some(q) = &self.queries {
            let _ = writeln!(out, "# HELP mongodns_queries_total queries answered, by transport, query type and rcode\n# TYPE mongodns_queries_total counter");
            for c in q.counts() {
                let _ = writeln!(
                    out,
                    "mongodns_queries_total{{transport=\"{}\",qtype=\"{}\",rcode=\"{}\"}} {}",
                    c.transport,
                    c.qtype,
                    rcode_name(c.rcode),
                    c.count
                );
            }
            let _ = writeln!(out, "# HELP mongodns_dropped_total queries that got no reply, by transport and reason\n# TYPE mongodns_dropped_total counter");
            for (t, n) in crate::observe::TRANSPORTS.iter().zip(q.dropped()) {
                let _ = writeln!(
                    out,
                    "mongodns_dropped_total{{transport=\"{t}\",reason=\"unanswerable\"}} {n}"
                );
            }
        }
        let _ = writeln!(out, "# HELP mongodns_kernel_udp_errors_total UDP datagrams the kernel dropped, host-wide (/proc/net/snmp and snmp6): receive buffer full, send buffer full, all input errors\n# TYPE mongodns_kernel_udp_errors_total counter");
        for (family, kind, n) in kernel_udp_errors() {
            let _ = writeln!(
                out,
                "mongodns_kernel_udp_errors_total{{family=\"{family}\",kind=\"{kind}\"}} {n}"
            );
        }
        let _ = writeln!(out, "# HELP mongodns_build_info version of this server\n# TYPE mongodns_build_info gauge\nmongodns_build_info{{version=\"{}\"}} 1", env!("CARGO_PKG_VERSION"));
        if jobs.is_empty() {
            return;
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let _ = writeln!(out, "# HELP mongodns_job_done units done by an import or signing job (progress collection)\n# TYPE mongodns_job_done gauge");
        for j in jobs {
            let _ = writeln!(
                out,
                "mongodns_job_done{{kind=\"{}\",zone=\"{}\",state=\"{}\"}} {}",
                escape(&j.kind),
                escape(&j.zone),
                escape(&j.state),
                j.done
            );
        }
        let _ = writeln!(out, "# HELP mongodns_job_total units in the whole job (0 while unknown)\n# TYPE mongodns_job_total gauge");
        for j in jobs {
            let _ = writeln!(
                out,
                "mongodns_job_total{{kind=\"{}\",zone=\"{}\",state=\"{}\"}} {}",
                escape(&j.kind),
                escape(&j.zone),
                escape(&j.state),
                j.total
            );
        }
        let _ = writeln!(out, "# HELP mongodns_job_running 1 while the job reports state running\n# TYPE mongodns_job_running gauge");
        for j in jobs {
            let _ = writeln!(
                out,
                "mongodns_job_running{{kind=\"{}\",zone=\"{}\"}} {}",
                escape(&j.kind),
                escape(&j.zone),
                u8::from(j.state == "running")
            );
        }
        let _ = writeln!(out, "# HELP mongodns_job_report_age_seconds seconds since the job last reported (a running job reports every second)\n# TYPE mongodns_job_report_age_seconds gauge");
        for j in jobs {
            let _ = writeln!(
                out,
                "mongodns_job_report_age_seconds{{kind=\"{}\",zone=\"{}\"}} {:.1}",
                escape(&j.kind),
                escape(&j.zone),
                (now_ms - j.updated_ms).max(0) as f64 / 1000.0
            );
        }
    }

    fn prometheus(&self, jobs: &[JobProgress]) -> String {
        let mut out = String::new();
        self.prometheus_extra(&mut out, jobs);
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

/// A Prometheus label value with `\\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// (family, kind, count) from the kernel's UDP counters, host-wide.
fn kernel_udp_errors() -> Vec<(&'static str, &'static str, u64)> {
    let mut out = Vec::new();
    // /proc/net/snmp: a "Udp:" header line, then a "Udp:" values line.
    if let Ok(text) = std::fs::read_to_string("/proc/net/snmp") {
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
        if rows.len() >= 2 {
            let names: Vec<&str> = rows[0].split_whitespace().collect();
            let values: Vec<&str> = rows[1].split_whitespace().collect();
            for (name, value) in names.iter().zip(&values) {
                let kind = match *name {
                    "RcvbufErrors" => "rcvbuf",
                    "SndbufErrors" => "sndbuf",
                    "InErrors" => "in",
                    _ => continue,
                };
                out.push(("ipv4", kind, value.parse().unwrap_or(0)));
            }
        }
    }
    // /proc/net/snmp6: "Udp6RcvbufErrors  12" lines.
    if let Ok(text) = std::fs::read_to_string("/proc/net/snmp6") {
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                continue;
            };
            let kind = match name {
                "Udp6RcvbufErrors" => "rcvbuf",
                "Udp6SndbufErrors" => "sndbuf",
                "Udp6InErrors" => "in",
                _ => continue,
            };
            out.push(("ipv6", kind, value.parse().unwrap_or(0)));
        }
    }
    out
}
