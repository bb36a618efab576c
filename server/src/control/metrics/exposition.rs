//! The Prometheus text exposition format of the labelled families:
//! queries by transport, type and rcode; drops; the kernel's UDP errors;
//! build info; job progress; the database latency histogram. Each family
//! opens with its `# HELP` and `# TYPE` lines (`family`), and label values
//! are escaped (`escape`).
//!
//! ```text
//!  write_query_counts   ─► mongodns_queries_total{transport,qtype,rcode},
//!                          mongodns_dropped_total{transport,reason}
//!  write_kernel_udp_errors ─► mongodns_kernel_udp_errors_total{family,kind}
//!                             (the counts: snmp.rs)
//!  write_build_info     ─► mongodns_build_info{version} 1
//!  write_jobs           ─► JOB_LINES: mongodns_job_{done,total}{kind,zone,
//!                          state}, mongodns_job_{running,
//!                          report_age_seconds}{kind,zone}
//!  write_db_latency     ─► mongodns_db_latency_seconds _bucket{le}, _sum,
//!                          _count (cumulative)
//! ```

use super::MetricKind;
use crate::cache::{Counters, DB_LATENCY_BUCKETS_US};
use crate::observe::{QueryMetrics, TRANSPORTS};
use crate::querylog::rcode_name;
use backend_mongo::JobProgress;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

/// The `# HELP` and `# TYPE` lines of a metric family.
pub(super) fn family(out: &mut String, name: &str, help: &str, kind: MetricKind) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {}", kind.as_str());
}

/// A Prometheus label value with `\\`, `"` and newlines escaped.
pub(super) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Queries answered by transport, type and rcode, and queries dropped.
pub(super) fn write_query_counts(out: &mut String, q: &QueryMetrics) {
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
    for (t, n) in TRANSPORTS.iter().zip(q.dropped()) {
        let _ = writeln!(
            out,
            "mongodns_dropped_total{{transport=\"{t}\",reason=\"unanswerable\"}} {n}"
        );
    }
}

/// The kernel's UDP drop counters, host-wide: (family, kind, count).
pub(super) fn write_kernel_udp_errors(out: &mut String, errors: &[(&str, &str, u64)]) {
    family(
        out,
        "mongodns_kernel_udp_errors_total",
        "UDP datagrams the kernel dropped, host-wide (/proc/net/snmp and snmp6): receive buffer full, send buffer full, all input errors",
        MetricKind::Counter,
    );
    for (family, kind, n) in errors {
        let _ = writeln!(
            out,
            "mongodns_kernel_udp_errors_total{{family=\"{family}\",kind=\"{kind}\"}} {n}"
        );
    }
}

/// `mongodns_build_info{version}`, always 1.
pub(super) fn write_build_info(out: &mut String) {
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

/// Milliseconds since the Unix epoch, the clock job reports are stamped by.
pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A job family: name, help, whether its series carry the `state` label,
/// and a job's value given the time now (ms).
type JobLine = (
    &'static str,
    &'static str,
    bool,
    fn(&JobProgress, i64) -> String,
);

/// Each job's progress: units done and in all, running, age of its report.
const JOB_LINES: [JobLine; 4] = [
    (
        "mongodns_job_done",
        "units done by an import or signing job (progress collection)",
        true,
        |j, _| j.done.to_string(),
    ),
    (
        "mongodns_job_total",
        "units in the whole job (0 while unknown)",
        true,
        |j, _| j.total.to_string(),
    ),
    (
        "mongodns_job_running",
        "1 while the job reports state running",
        false,
        |j, _| u8::from(j.state == "running").to_string(),
    ),
    (
        "mongodns_job_report_age_seconds",
        "seconds since the job last reported (a running job reports every second)",
        false,
        |j, now_ms| format!("{:.1}", (now_ms - j.updated_ms).max(0) as f64 / 1000.0),
    ),
];

/// Every family of [`JOB_LINES`], a series per job (nothing without jobs).
pub(super) fn write_jobs(out: &mut String, jobs: &[JobProgress], now_ms: i64) {
    if jobs.is_empty() {
        return;
    }
    for (name, help, with_state, value) in JOB_LINES {
        family(out, name, help, MetricKind::Gauge);
        for j in jobs {
            let mut labels = format!("kind=\"{}\",zone=\"{}\"", escape(&j.kind), escape(&j.zone));
            if with_state {
                let _ = write!(labels, ",state=\"{}\"", escape(&j.state));
            }
            let _ = writeln!(out, "{name}{{{labels}}} {}", value(j, now_ms));
        }
    }
}

/// The database latency histogram (cumulative buckets, sum, count).
pub(super) fn write_db_latency(out: &mut String, counters: &Counters) {
    let buckets = &counters.db_latency_buckets;
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
    let sum = counters.db_latency_us.load(Ordering::Relaxed) as f64 / 1e6;
    let _ = writeln!(
        out,
        "mongodns_db_latency_seconds_sum {sum}\nmongodns_db_latency_seconds_count {cumulative}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let jobs = [
            job("import", "example.com.", "running", 3, 1_000),
            job("sign", "q\"uo\\te.\n", "done", 10, 5_000),
        ];
        let mut out = String::new();
        write_jobs(&mut out, &jobs, 3_500);
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
        let mut none = String::new();
        write_jobs(&mut none, &[], 0);
        assert_eq!(none, "");
    }

    #[test]
    fn kernel_errors_and_build_info_lines() {
        let mut out = String::new();
        write_kernel_udp_errors(&mut out, &[("ipv4", "rcvbuf", 7), ("ipv6", "in", 0)]);
        write_build_info(&mut out);
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
        assert!(out.contains("# TYPE mongodns_build_info gauge\n"));
    }
}
