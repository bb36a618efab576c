//! The control endpoint's numbers: every metric typed as a counter or a
//! gauge, as `/stats` JSON and as the Prometheus text format.
//!
//! ```text
//!  Control::snapshot ─► packet cache, record cache, denial cache, zones,
//!                       database, queries, query log, serving, resident
//!                       zones (residency.rs), guard
//!                       (each a short list of Metric: name, help, kind, value)
//!  /stats   ─► json: {"name":value,…}
//!  /metrics ─► prometheus: labelled families (queries by transport/type/
//!              rcode, drops, kernel UDP errors, build info, job progress,
//!              resident zones: residency.rs),
//!              then every Metric with its # TYPE, then the database
//!              latency histogram
//! ```
//!
//! A counter only grows while the process runs (hits, misses, errors,
//! lines written); a gauge is a level that moves both ways (entries held,
//! reads in flight, 0/1 states). The names predate the types and stay as
//! dashboards know them (no `_total` suffix on the unlabelled counters).

use super::Control;
use crate::cache::DB_LATENCY_BUCKETS_US;
use crate::querylog::rcode_name;
use backend_mongo::JobProgress;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// How Prometheus reads a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Only grows while the process runs (`rate()` applies).
    Counter,
    /// A level: goes up and down.
    Gauge,
}

impl MetricKind {
    /// The word of a `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// One unlabelled number of `/stats` and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metric {
    /// The name, without the `mongodns_` prefix `/metrics` adds.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// The value now.
    pub value: u64,
}

/// A metric that only grows.
pub(super) fn counter(name: &'static str, help: &'static str, value: u64) -> Metric {
    Metric {
        name,
        help,
        kind: MetricKind::Counter,
        value,
    }
}

/// A metric that moves both ways.
pub(super) fn gauge(name: &'static str, help: &'static str, value: u64) -> Metric {
    Metric {
        name,
        help,
        kind: MetricKind::Gauge,
        value,
    }
}

/// An atomic's value now.
fn load(a: &AtomicU64) -> u64 {
    a.load(Ordering::Relaxed)
}

impl Control {
    /// Every unlabelled metric, in the order `/stats` and `/metrics` show them.
    pub fn snapshot(&self) -> Vec<Metric> {
        let mut all = Vec::with_capacity(64);
        all.extend(self.packet_cache_metrics());
        all.extend(self.record_cache_metrics());
        all.extend(self.denial_cache_metrics());
        all.extend(self.zone_metrics());
        all.extend(self.database_metrics());
        all.extend(self.query_metrics());
        all.extend(self.query_log_metrics());
        all.extend(self.serving_metrics());
        all.extend(self.resident_metrics());
        all.extend(guard_metrics());
        all.push(gauge(
            "tcp_connections",
            "DNS TCP connections holding a slot now",
            crate::guard::TCP_CONNECTIONS.load(Ordering::Relaxed),
        ));
        all.push(gauge(
            "updates_in_progress",
            "DNS UPDATEs being applied now, those waiting for the zone lock included",
            crate::guard::UPDATES_IN_PROGRESS.load(Ordering::Relaxed),
        ));
        all.extend(notify_metrics());
        all
    }

    fn packet_cache_metrics(&self) -> [Metric; 6] {
        let p = &self.packets;
        [
            counter(
                "packet_cache_hits",
                "replies served from the packet cache",
                load(&p.stats.hits),
            ),
            counter(
                "packet_cache_misses",
                "cacheable queries not in the packet cache",
                load(&p.stats.misses),
            ),
            counter(
                "packet_cache_uncacheable",
                "queries of a shape the packet cache skips",
                load(&p.stats.uncacheable),
            ),
            counter(
                "packet_cache_evictions",
                "replies evicted to stay within bounds",
                p.evictions(),
            ),
            gauge("packet_cache_entries", "replies held", p.len() as u64),
            gauge(
                "packet_cache_bytes",
                "approximate bytes held by the packet cache",
                p.bytes() as u64,
            ),
        ]
    }

    fn record_cache_metrics(&self) -> [Metric; 5] {
        let c = &self.counters;
        [
            counter(
                "record_cache_hits",
                "node lookups served from the record cache",
                load(&c.record_hits),
            ),
            counter(
                "record_cache_misses",
                "node lookups that needed the database",
                load(&c.record_misses),
            ),
            counter(
                "record_cache_evictions",
                "nodes evicted to stay within bounds",
                self.records.evictions(),
            ),
            counter(
                "record_cache_version_drops",
                "nodes dropped because their zone moved to a new version",
                load(&c.version_drops),
            ),
            gauge(
                "record_cache_entries",
                "nodes held",
                self.records.len() as u64,
            ),
        ]
    }

    fn denial_cache_metrics(&self) -> [Metric; 5] {
        let c = &self.counters;
        [
            counter(
                "denial_cache_hits",
                "DNSSEC denial lookups served from the denial cache",
                load(&c.denial_hits),
            ),
            counter(
                "denial_cache_misses",
                "DNSSEC denial lookups that needed the database",
                load(&c.denial_misses),
            ),
            gauge(
                "denial_cache_entries",
                "NSEC/NSEC3 records held by the denial cache",
                self.records.denial_len() as u64,
            ),
            gauge(
                "denial_cache_bytes",
                "approximate bytes held by the denial cache",
                self.records.denial_bytes() as u64,
            ),
            counter(
                "denial_cache_evictions",
                "denial records evicted to stay within bounds",
                self.records.denial_evictions(),
            ),
        ]
    }

    fn zone_metrics(&self) -> [Metric; 6] {
        let c = &self.counters;
        let (waited, unnarrowed) = self.registry.narrowing_counts();
        [
            counter(
                "zone_cache_hits",
                "zone lookups served from memory",
                load(&c.zone_hits),
            ),
            counter(
                "zone_cache_misses",
                "zone lookups that needed the database",
                load(&c.zone_misses),
            ),
            gauge(
                "zones_known",
                "zones in the registry",
                self.registry.len() as u64,
            ),
            counter(
                "zone_changes",
                "zone changes noticed by polling",
                load(&c.zone_changes),
            ),
            counter(
                "zone_changes_waited",
                "zone changes held back a poll for a generation not yet accounted for",
                waited,
            ),
            counter(
                "zone_changes_unnarrowed",
                "zone changes that dropped every cached node of the zone",
                unnarrowed,
            ),
        ]
    }

    fn database_metrics(&self) -> [Metric; 5] {
        let c = &self.counters;
        [
            counter("db_queries", "database round trips", load(&c.db_queries)),
            counter(
                "db_errors",
                "database round trips that failed",
                load(&c.db_errors),
            ),
            counter(
                "db_latency_us_sum",
                "total database latency in microseconds",
                load(&c.db_latency_us),
            ),
            gauge(
                "db_inflight",
                "database reads in flight",
                load(&c.db_inflight),
            ),
            counter(
                "catalog_zone_reads",
                "zone documents and catalog nodes read to keep the catalog zone",
                load(&c.catalog_reads),
            ),
        ]
    }

    fn query_metrics(&self) -> [Metric; 5] {
        let q = self.queries.as_ref();
        [
            counter(
                "pipeline_queries",
                "queries answered by the full pipeline",
                load(&self.counters.pipeline_queries),
            ),
            counter(
                "queries_udp",
                "queries answered over UDP",
                q.map_or(0, |q| q.total_for("udp")),
            ),
            counter(
                "queries_tcp",
                "queries answered over TCP",
                q.map_or(0, |q| q.total_for("tcp")),
            ),
            gauge(
                "queries_inflight",
                "queries in the answer pipeline now (cache misses in flight)",
                q.map_or(0, |q| q.inflight.load(Ordering::Relaxed)),
            ),
            counter(
                "dropped_queries",
                "queries that got no reply (malformed, not a query)",
                q.map_or(0, |q| q.dropped().iter().sum()),
            ),
        ]
    }

    fn query_log_metrics(&self) -> [Metric; 4] {
        let stat = |f: fn(&crate::querylog::QueryLogStats) -> &AtomicU64| {
            self.query_log.as_ref().map_or(0, |q| load(f(q.stats())))
        };
        [
            counter(
                "query_log_lines",
                "query log lines written",
                stat(|s| &s.written),
            ),
            counter(
                "query_log_dropped",
                "query log lines dropped because the writer could not keep up",
                stat(|s| &s.dropped),
            ),
            counter(
                "query_log_write_errors",
                "query log lines lost to write errors",
                stat(|s| &s.write_errors),
            ),
            counter(
                "query_log_rotations",
                "query log files rotated or reopened",
                stat(|s| &s.rotations),
            ),
        ]
    }

    /// Uptime, serve-stale, shedding, timeouts and freshness.
    fn serving_metrics(&self) -> [Metric; 7] {
        let c = &self.counters;
        [
            gauge(
                "uptime_seconds",
                "seconds since the server started",
                self.started.elapsed().as_secs(),
            ),
            counter(
                "stale_replies",
                "expired replies served because the database failed (serve-stale)",
                load(&self.packets.stats.stale_hits),
            ),
            counter(
                "stale_nodes",
                "expired records used because the database failed (serve-stale)",
                load(&c.stale_nodes),
            ),
            counter(
                "db_shed",
                "database reads refused at once because too many were waiting (load shedding)",
                load(&c.db_shed),
            ),
            counter(
                "query_timeouts",
                "uncached queries that ran out of time (SERVFAIL or stale)",
                load(&c.query_timeouts),
            ),
            gauge(
                "zone_registry_complete",
                "1 when every served zone is in memory (names in no zone cost no database read)",
                u64::from(self.registry.is_complete()),
            ),
            gauge(
                "freshness_lag_ms",
                "milliseconds since the last successful change poll",
                self.registry
                    .poll_age()
                    .map_or(u64::MAX, |d| d.as_millis() as u64),
            ),
        ]
    }

    /// `/stats`: every unlabelled metric as one JSON object.
    pub(super) fn json(&self) -> String {
        let mut out = String::from("{");
        for (i, m) in self.snapshot().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{}\":{}", m.name, m.value);
        }
        out.push('}');
        out
    }

    /// `/metrics`: the Prometheus text format (`jobs`: job progress read
    /// from the database).
    pub(super) fn prometheus(&self, jobs: &[JobProgress]) -> String {
        let mut out = String::new();
        self.write_query_counts(&mut out);
        write_kernel_udp_errors(&mut out);
        write_build_info(&mut out);
        write_jobs(&mut out, jobs);
        self.write_resident_zones(&mut out);
        for m in self.snapshot() {
            let name = format!("mongodns_{}", m.name);
            family(&mut out, &name, m.help, m.kind);
            let _ = writeln!(out, "{name} {}", m.value);
        }
        self.write_db_latency(&mut out);
        out
    }

    /// Queries answered by transport, type and rcode, and queries dropped.
    fn write_query_counts(&self, out: &mut String) {
        let Some(q) = &self.queries else {
            return;
        };
        family(
            out,
            "mongodns_queries_total",
            "queries answered, by transport, query type and rcode",
            MetricKind::Counter,
        );
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
        family(
            out,
            "mongodns_dropped_total",
            "queries that got no reply, by transport and reason",
            MetricKind::Counter,
        );
        for (t, n) in crate::observe::TRANSPORTS.iter().zip(q.dropped()) {
            let _ = writeln!(
                out,
                "mongodns_dropped_total{{transport=\"{t}\",reason=\"unanswerable\"}} {n}"
            );
        }
    }

    /// The database latency histogram (cumulative buckets, sum, count).
    fn write_db_latency(&self, out: &mut String) {
        let buckets = &self.counters.db_latency_buckets;
        let _ = writeln!(
            out,
            "# HELP mongodns_db_latency_seconds database round-trip latency\n# TYPE mongodns_db_latency_seconds histogram"
        );
        let mut cumulative = 0;
        for (i, bound) in DB_LATENCY_BUCKETS_US.iter().enumerate() {
            cumulative += buckets[i].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "mongodns_db_latency_seconds_bucket{{le=\"{}\"}} {cumulative}",
                *bound as f64 / 1e6
            );
        }
        cumulative += buckets[DB_LATENCY_BUCKETS_US.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "mongodns_db_latency_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let sum = self.counters.db_latency_us.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "mongodns_db_latency_seconds_sum {sum}\nmongodns_db_latency_seconds_count {cumulative}"
        );
    }
}

/// The process's guard counters (TCP, UDP, transfer and control limits):
/// every one a count of events.
fn guard_metrics() -> impl Iterator<Item = Metric> {
    crate::guard::GUARD
        .snapshot()
        .into_iter()
        .map(|(name, help, value)| counter(name, help, value))
}

/// The NOTIFY counters (crate::notify).
fn notify_metrics() -> impl Iterator<Item = Metric> {
    crate::notify::NOTIFY
        .snapshot()
        .into_iter()
        .map(|(name, help, value)| counter(name, help, value))
}

/// The `# HELP` and `# TYPE` lines of a metric family.
pub(super) fn family(out: &mut String, name: &str, help: &str, kind: MetricKind) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {}", kind.as_str());
}

/// The kernel's UDP drop counters, host-wide.
fn write_kernel_udp_errors(out: &mut String) {
    family(
        out,
        "mongodns_kernel_udp_errors_total",
        "UDP datagrams the kernel dropped, host-wide (/proc/net/snmp and snmp6): receive buffer full, send buffer full, all input errors",
        MetricKind::Counter,
    );
    for (family, kind, n) in kernel_udp_errors() {
        let _ = writeln!(
            out,
            "mongodns_kernel_udp_errors_total{{family=\"{family}\",kind=\"{kind}\"}} {n}"
        );
    }
}

/// `mongodns_build_info{version}`, always 1.
fn write_build_info(out: &mut String) {
    family(
        out,
        "mongodns_build_info",
        "version of this server",
        MetricKind::Gauge,
    );
    let _ = writeln!(
        out,
        "mongodns_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
}

/// Each job's progress: units done and in all, running, age of its report.
fn write_jobs(out: &mut String, jobs: &[JobProgress]) {
    if jobs.is_empty() {
        return;
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let labels =
        |j: &JobProgress| format!("kind=\"{}\",zone=\"{}\"", escape(&j.kind), escape(&j.zone));
    let with_state = |j: &JobProgress| format!("{},state=\"{}\"", labels(j), escape(&j.state));
    let name = "mongodns_job_done";
    family(
        out,
        name,
        "units done by an import or signing job (progress collection)",
        MetricKind::Gauge,
    );
    for j in jobs {
        let _ = writeln!(out, "{name}{{{}}} {}", with_state(j), j.done);
    }
    let name = "mongodns_job_total";
    family(
        out,
        name,
        "units in the whole job (0 while unknown)",
        MetricKind::Gauge,
    );
    for j in jobs {
        let _ = writeln!(out, "{name}{{{}}} {}", with_state(j), j.total);
    }
    let name = "mongodns_job_running";
    family(
        out,
        name,
        "1 while the job reports state running",
        MetricKind::Gauge,
    );
    for j in jobs {
        let _ = writeln!(
            out,
            "{name}{{{}}} {}",
            labels(j),
            u8::from(j.state == "running")
        );
    }
    let name = "mongodns_job_report_age_seconds";
    family(
        out,
        name,
        "seconds since the job last reported (a running job reports every second)",
        MetricKind::Gauge,
    );
    for j in jobs {
        let age = (now_ms - j.updated_ms).max(0) as f64 / 1000.0;
        let _ = writeln!(out, "{name}{{{}}} {age:.1}", labels(j));
    }
}

/// A Prometheus label value with `\\`, `"` and newlines escaped.
pub(super) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// (family, kind, count) from the kernel's UDP counters, host-wide.
fn kernel_udp_errors() -> Vec<(&'static str, &'static str, u64)> {
    let mut out = udp4_errors();
    out.extend(udp6_errors());
    out
}

/// /proc/net/snmp: a "Udp:" header line, then a "Udp:" values line.
fn udp4_errors() -> Vec<(&'static str, &'static str, u64)> {
    let mut out = Vec::new();
    let Ok(text) = std::fs::read_to_string("/proc/net/snmp") else {
        return out;
    };
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
    if rows.len() < 2 {
        return out;
    }
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
    out
}

/// /proc/net/snmp6: "Udp6RcvbufErrors  12" lines.
fn udp6_errors() -> Vec<(&'static str, &'static str, u64)> {
    let mut out = Vec::new();
    let Ok(text) = std::fs::read_to_string("/proc/net/snmp6") else {
        return out;
    };
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
    out
}
