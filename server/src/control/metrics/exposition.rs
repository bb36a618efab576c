//! `/metrics` on the prometheus-client crate: each group of families is a
//! collector ([`Scraped`]) that reads the server's own atomics when the
//! registry is encoded; the hot path keeps its counters as they are.
//!
//! ```text
//!  prometheus(control, jobs) ─► Registry, collectors in this order:
//!    query_counts      ─► mongodns_queries_total{transport,qtype,rcode},
//!                         mongodns_dropped_total{transport,reason}
//!    kernel_udp_errors ─► mongodns_kernel_udp_errors_total{family,kind}
//!                         (the counts: snmp.rs)
//!    build_info        ─► mongodns_build_info{version} 1
//!    job_progress      ─► JOB_LINES: mongodns_job_{done,total}{kind,zone,
//!                         state}, mongodns_job_{running,
//!                         report_age_seconds}{kind,zone}
//!    resident zones    ─► residency.rs
//!    unlabelled        ─► every Metric of Control::snapshot
//!  ─► text::encode_registry (no `# EOF`), then
//!  db_latency ─► mongodns_db_latency_seconds _bucket{le}, _sum, _count
//!  ─► prometheus_text::encode
//! ```
//!
//! The names predate the types, so every sample is written with
//! `encode_gauge`, which keeps the family's name: `encode_counter` would
//! append `_total` (`mongodns_packet_cache_hits_total`). The histogram goes
//! through the 0.0.4 text writer, whose `le` labels (`1`, not `1.0`) and
//! line order (buckets, sum, count) are those the endpoint always had.

use super::MetricKind;
use crate::cache::{Counters, DB_LATENCY_BUCKETS_US};
use crate::control::Control;
use crate::observe::{QueryMetrics, TRANSPORTS};
use crate::querylog::rcode_name;
use backend_mongo::JobProgress;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    prometheus_text, text, DescriptorEncoder, EncodeGaugeValue, GaugeValueEncoder, MetricEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A collector that writes its families (`F`) at each scrape.
struct Scraped<F>(F);

impl<F> fmt::Debug for Scraped<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scraped")
    }
}

impl<F> Collector for Scraped<F>
where
    F: Fn(&mut DescriptorEncoder) -> fmt::Result + Send + Sync + 'static,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        (self.0)(&mut encoder)
    }
}

/// Adds a [`Scraped`] collector to `registry`.
fn add<F>(registry: &mut Registry, families: F)
where
    F: Fn(&mut DescriptorEncoder) -> fmt::Result + Send + Sync + 'static,
{
    registry.register_collector(Box::new(Scraped(families)));
}

/// `/metrics`: the labelled families, every unlabelled metric, then the
/// database latency histogram (`jobs`: job progress read from the
/// database).
pub(super) fn prometheus(control: &Arc<Control>, jobs: Vec<JobProgress>) -> String {
    let mut registry = Registry::default();
    if let Some(queries) = control.queries.clone() {
        add(&mut registry, move |e| query_counts(e, &queries));
    }
    add(&mut registry, |e| {
        kernel_udp_errors(e, &super::snmp::kernel_udp_errors())
    });
    add(&mut registry, build_info);
    add(&mut registry, move |e| job_progress(e, &jobs, now_ms()));
    let c = control.clone();
    add(&mut registry, move |e| c.encode_resident_zones(e));
    let c = control.clone();
    add(&mut registry, move |e| unlabelled(e, &c));
    let mut latency = Registry::default();
    let counters = control.counters.clone();
    add(&mut latency, move |e| db_latency(e, &counters));
    let mut out = String::new();
    // Writing to a String fails only if a collector does, and none does.
    let _ = text::encode_registry(&mut out, &registry);
    let _ = prometheus_text::encode(&mut out, &latency);
    out
}

/// A family's `# HELP` and `# TYPE` lines; its samples go through the
/// encoder returned.
pub(super) fn family<'s>(
    e: &'s mut DescriptorEncoder,
    name: &'s str,
    help: &str,
    kind: MetricKind,
) -> Result<MetricEncoder<'s>, fmt::Error> {
    e.encode_descriptor(name, help, None, kind.metric_type())
}

/// One sample, `NAME{labels} VALUE`, named as its family (a counter too).
pub(super) fn sample(
    m: &mut MetricEncoder,
    labels: &[(&str, &str)],
    value: &impl EncodeGaugeValue,
) -> fmt::Result {
    match labels {
        [] => m.encode_gauge(value),
        _ => m.encode_family(&labels)?.encode_gauge(value),
    }
}

/// Every unlabelled metric, in the order of [`Control::snapshot`].
fn unlabelled(e: &mut DescriptorEncoder, control: &Control) -> fmt::Result {
    for m in control.snapshot() {
        let name = format!("mongodns_{}", m.name);
        sample(&mut family(e, &name, m.help, m.kind)?, &[], &m.value)?;
    }
    Ok(())
}

/// Queries answered by transport, type and rcode, and queries dropped.
fn query_counts(e: &mut DescriptorEncoder, q: &QueryMetrics) -> fmt::Result {
    let mut m = family(
        e,
        "mongodns_queries_total",
        "queries answered, by transport, query type and rcode",
        MetricKind::Counter,
    )?;
    for c in q.counts() {
        let labels = [
            ("transport", c.transport),
            ("qtype", c.qtype),
            ("rcode", rcode_name(c.rcode)),
        ];
        sample(&mut m, &labels, &c.count)?;
    }
    let mut m = family(
        e,
        "mongodns_dropped_total",
        "queries that got no reply, by transport and reason",
        MetricKind::Counter,
    )?;
    for (t, n) in TRANSPORTS.iter().zip(q.dropped()) {
        sample(&mut m, &[("transport", *t), ("reason", "unanswerable")], &n)?;
    }
    Ok(())
}

/// The kernel's UDP drop counters, host-wide: (family, kind, count).
fn kernel_udp_errors(e: &mut DescriptorEncoder, errors: &[(&str, &str, u64)]) -> fmt::Result {
    let mut m = family(
        e,
        "mongodns_kernel_udp_errors_total",
        "UDP datagrams the kernel dropped, host-wide (/proc/net/snmp and snmp6): receive buffer full, send buffer full, all input errors",
        MetricKind::Counter,
    )?;
    for (family, kind, n) in errors {
        sample(&mut m, &[("family", *family), ("kind", *kind)], n)?;
    }
    Ok(())
}

/// `mongodns_build_info{version}`, always 1.
fn build_info(e: &mut DescriptorEncoder) -> fmt::Result {
    let mut m = family(
        e,
        "mongodns_build_info",
        "version of this server",
        MetricKind::Gauge,
    )?;
    sample(&mut m, &[("version", env!("CARGO_PKG_VERSION"))], &1u64)
}

/// Milliseconds since the Unix epoch, the clock job reports are stamped by.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A job's value: a count, or seconds to a tenth.
enum JobValue {
    /// Units, or 0/1.
    Count(u64),
    /// Seconds, rounded to a tenth.
    Seconds(f64),
}

impl EncodeGaugeValue for JobValue {
    fn encode(&self, encoder: &mut GaugeValueEncoder) -> fmt::Result {
        match self {
            JobValue::Count(n) => n.encode(encoder),
            JobValue::Seconds(s) => s.encode(encoder),
        }
    }
}

/// Milliseconds as seconds rounded to a tenth as `{:.1}` rounds them, so
/// that the shortest form of the number is that text (`3.5`, `0.0`).
fn tenths(ms: i64) -> f64 {
    let text = format!("{:.1}", ms.max(0) as f64 / 1000.0);
    text.parse().unwrap_or(0.0)
}

/// A job family: name, help, whether its series carry the `state` label,
/// and a job's value given the time now (ms).
type JobLine = (
    &'static str,
    &'static str,
    bool,
    fn(&JobProgress, i64) -> JobValue,
);

/// Each job's progress: units done and in all, running, age of its report.
const JOB_LINES: [JobLine; 4] = [
    (
        "mongodns_job_done",
        "units done by an import or signing job (progress collection)",
        true,
        |j, _| JobValue::Count(j.done),
    ),
    (
        "mongodns_job_total",
        "units in the whole job (0 while unknown)",
        true,
        |j, _| JobValue::Count(j.total),
    ),
    (
        "mongodns_job_running",
        "1 while the job reports state running",
        false,
        |j, _| JobValue::Count(u64::from(j.state == "running")),
    ),
    (
        "mongodns_job_report_age_seconds",
        "seconds since the job last reported (a running job reports every second)",
        false,
        |j, now_ms| JobValue::Seconds(tenths(now_ms - j.updated_ms)),
    ),
];

/// Every family of [`JOB_LINES`], a series per job (nothing without jobs).
fn job_progress(e: &mut DescriptorEncoder, jobs: &[JobProgress], now_ms: i64) -> fmt::Result {
    if jobs.is_empty() {
        return Ok(());
    }
    for (name, help, with_state, value) in JOB_LINES {
        let mut m = family(e, name, help, MetricKind::Gauge)?;
        for j in jobs {
            let labels = [
                ("kind", j.kind.as_str()),
                ("zone", j.zone.as_str()),
                ("state", j.state.as_str()),
            ];
            let labels = if with_state {
                &labels[..]
            } else {
                &labels[..2]
            };
            sample(&mut m, labels, &value(j, now_ms))?;
        }
    }
    Ok(())
}

/// The database latency histogram (cumulative buckets, sum, count).
fn db_latency(e: &mut DescriptorEncoder, counters: &Counters) -> fmt::Result {
    let counts = &counters.db_latency_buckets;
    let buckets: Vec<(f64, u64)> = DB_LATENCY_BUCKETS_US
        .iter()
        .zip(counts)
        .map(|(bound, n)| (*bound as f64 / 1e6, n.load(Ordering::Relaxed)))
        .collect();
    let over = counts[DB_LATENCY_BUCKETS_US.len()].load(Ordering::Relaxed);
    let count = buckets.iter().map(|b| b.1).sum::<u64>() + over;
    let sum = counters.db_latency_us.load(Ordering::Relaxed) as f64 / 1e6;
    let mut m = e.encode_descriptor(
        "mongodns_db_latency_seconds",
        "database round-trip latency",
        None,
        prometheus_client::metrics::MetricType::Histogram,
    )?;
    let no_exemplars: Option<&HashMap<usize, Exemplar<NoLabelSet, f64>>> = None;
    m.encode_histogram(sum, count, &buckets, no_exemplars)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `families` writes, alone in a registry, as `/metrics` writes it.
    fn encoded<F>(families: F) -> String
    where
        F: Fn(&mut DescriptorEncoder) -> fmt::Result + Send + Sync + 'static,
    {
        let mut registry = Registry::default();
        add(&mut registry, families);
        let mut out = String::new();
        text::encode_registry(&mut out, &registry).unwrap();
        out
    }

    fn job(kind: &str, zone: &str, state: &str, done: u64, updated_ms: i64) -> JobProgress {
        JobProgress {
            id: format!("{kind}:{zone}"),
            kind: kind.into(),
            zone: zone.into(),
            state: state.into(),
            done,
            total: 10,
            host: "here".into(),
            pid: 1,
            started_ms: 0,
            updated_ms,
        }
    }

    #[test]
    fn jobs_are_four_families_with_escaped_labels() {
        let jobs = vec![
            job("import", "example.com.", "running", 3, 1_000),
            job("sign", "q\"uo\\te.\n", "done", 10, 5_000),
        ];
        let out = encoded(move |e| job_progress(e, &jobs, 3_500));
        let expect = "\
# HELP mongodns_job_done units done by an import or signing job (progress collection)
# TYPE mongodns_job_done gauge
mongodns_job_done{kind=\"import\",zone=\"example.com.\",state=\"running\"} 3
mongodns_job_done{kind=\"sign\",zone=\"q\\\"uo\\\\te.\\n\",state=\"done\"} 10
# HELP mongodns_job_total units in the whole job (0 while unknown)
# TYPE mongodns_job_total gauge
mongodns_job_total{kind=\"import\",zone=\"example.com.\",state=\"running\"} 10
mongodns_job_total{kind=\"sign\",zone=\"q\\\"uo\\\\te.\\n\",state=\"done\"} 10
# HELP mongodns_job_running 1 while the job reports state running
# TYPE mongodns_job_running gauge
mongodns_job_running{kind=\"import\",zone=\"example.com.\"} 1
mongodns_job_running{kind=\"sign\",zone=\"q\\\"uo\\\\te.\\n\"} 0
# HELP mongodns_job_report_age_seconds seconds since the job last reported (a running job reports every second)
# TYPE mongodns_job_report_age_seconds gauge
mongodns_job_report_age_seconds{kind=\"import\",zone=\"example.com.\"} 2.5
mongodns_job_report_age_seconds{kind=\"sign\",zone=\"q\\\"uo\\\\te.\\n\"} 0.0
";
        assert_eq!(out, expect);
        assert_eq!(encoded(|e| job_progress(e, &[], 0)), "");
    }

    #[test]
    fn report_ages_read_as_tenths_always_did() {
        let mut ms: Vec<i64> = (0..20_000).collect();
        ms.extend([1_765_000_000_049, 1_765_000_000_050, 1_765_000_000_951]);
        for ms in ms {
            let e = encoded(move |e| job_progress(e, &[job("k", "z.", "done", 0, 0)], ms));
            let line = e.lines().last().unwrap();
            let want = format!("{:.1}", ms as f64 / 1000.0);
            assert_eq!(line.rsplit(' ').next(), Some(want.as_str()), "{ms} ms");
        }
    }

    #[test]
    fn counters_keep_their_names_without_total() {
        let out = encoded(|e| {
            sample(
                &mut family(e, "mongodns_x_hits", "hits", MetricKind::Counter)?,
                &[],
                &7u64,
            )
        });
        assert_eq!(
            out,
            "# HELP mongodns_x_hits hits\n# TYPE mongodns_x_hits counter\nmongodns_x_hits 7\n"
        );
    }

    #[test]
    fn kernel_errors_and_build_info_lines() {
        let out = encoded(|e| {
            kernel_udp_errors(e, &[("ipv4", "rcvbuf", 7), ("ipv6", "in", 0)])?;
            build_info(e)
        });
        let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
        let version = format!(
            "mongodns_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(
            lines,
            [
                "mongodns_kernel_udp_errors_total{family=\"ipv4\",kind=\"rcvbuf\"} 7",
                "mongodns_kernel_udp_errors_total{family=\"ipv6\",kind=\"in\"} 0",
                version.as_str(),
            ]
        );
        assert!(out.starts_with("# HELP mongodns_kernel_udp_errors_total UDP datagrams"));
        assert!(out.contains("# TYPE mongodns_kernel_udp_errors_total counter\n"));
        assert!(out.contains("# TYPE mongodns_build_info gauge\n"));
    }

    #[test]
    fn db_latency_is_cumulative_with_plain_bounds() {
        let counters = Arc::new(Counters::default());
        for (i, n) in [(0, 2), (3, 1), (11, 4), (12, 5)] {
            counters.db_latency_buckets[i].store(n, Ordering::Relaxed);
        }
        counters.db_latency_us.store(9_876_543, Ordering::Relaxed);
        let mut registry = Registry::default();
        let c = counters.clone();
        add(&mut registry, move |e| db_latency(e, &c));
        let mut out = String::new();
        prometheus_text::encode(&mut out, &registry).unwrap();
        let bounds = [
            "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
            "0.1", "0.25", "1",
        ];
        let cumulative = [2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 7];
        let mut expect = "# HELP mongodns_db_latency_seconds database round-trip latency\n\
                          # TYPE mongodns_db_latency_seconds histogram\n"
            .to_string();
        for (le, n) in bounds.iter().zip(cumulative) {
            expect += &format!("mongodns_db_latency_seconds_bucket{{le=\"{le}\"}} {n}\n");
        }
        expect += "mongodns_db_latency_seconds_bucket{le=\"+Inf\"} 12\n\
                   mongodns_db_latency_seconds_sum 9.876543\n\
                   mongodns_db_latency_seconds_count 12\n";
        assert_eq!(out, expect);
    }
}
