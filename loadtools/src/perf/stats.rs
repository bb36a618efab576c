//! Counting, merging and printing the figures of a run.
//!
//! ```text
//!  sent(size) / completed(reply, latency) / lost ─► Stats ─► merge ─► block / JSON
//!  latency: exact min/max/sum/sum of squares + hdrhistogram (ns, 3 digits)
//!  timeline: replies and max latency per 100 ms since the start
//! ```

use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// Width of one timeline bucket.
pub const BUCKET: Duration = Duration::from_millis(100);

/// RCODE names, as dnsperf prints them (the model's one table).
pub const RCODES: [&str; 16] = dns::rcode::HEADER_NAMES;

/// The figures of a run (of one client, or merged).
#[derive(Clone)]
pub struct Stats {
    start: Instant,
    /// Queries sent.
    pub sent: u64,
    /// Replies matched to a query.
    pub completed: u64,
    /// Queries that got no reply within the timeout.
    pub lost: u64,
    /// Replies per RCODE (the header's 4 bits).
    pub rcodes: [u64; 16],
    /// Bytes of queries sent (DNS message, without the TCP length).
    pub request_bytes: u64,
    /// Bytes of replies matched.
    pub response_bytes: u64,
    /// Last query sent, or reply received, since the start.
    pub last_event: Duration,
    /// Smallest latency.
    pub min: Duration,
    /// Largest latency.
    pub max: Duration,
    sum_ns: f64,
    sum_sq_ns: f64,
    /// Latencies in nanoseconds.
    pub histogram: Histogram<u64>,
    /// Replies per [`BUCKET`] since the start.
    pub timeline: Vec<u64>,
    /// Largest latency (ns) of the replies in each bucket.
    pub timeline_max: Vec<u64>,
}

impl Stats {
    /// Empty figures for a run that started at `start`.
    pub fn new(start: Instant) -> Stats {
        Stats {
            start,
            sent: 0,
            completed: 0,
            lost: 0,
            rcodes: [0; 16],
            request_bytes: 0,
            response_bytes: 0,
            last_event: Duration::ZERO,
            min: Duration::MAX,
            max: Duration::ZERO,
            sum_ns: 0.0,
            sum_sq_ns: 0.0,
            histogram: Histogram::new_with_bounds(1, 120_000_000_000, 3).expect("valid bounds"),
            timeline: Vec::new(),
            timeline_max: Vec::new(),
        }
    }

    pub(crate) fn sent(&mut self, size: usize, now: Instant) {
        self.sent += 1;
        self.request_bytes += size as u64;
        self.last_event = self.last_event.max(now - self.start);
    }

    pub(crate) fn completed(&mut self, reply: &[u8], latency: Duration, now: Instant) {
        self.completed += 1;
        self.rcodes[(reply[3] & 0x0f) as usize] += 1;
        self.response_bytes += reply.len() as u64;
        let since = now - self.start;
        self.last_event = self.last_event.max(since);
        self.min = self.min.min(latency);
        self.max = self.max.max(latency);
        let ns = latency.as_nanos() as u64;
        self.sum_ns += ns as f64;
        self.sum_sq_ns += (ns as f64) * (ns as f64);
        self.histogram.saturating_record(ns.max(1));
        let b = (since.as_nanos() / BUCKET.as_nanos()) as usize;
        if self.timeline.len() <= b {
            self.timeline.resize(b + 1, 0);
            self.timeline_max.resize(b + 1, 0);
        }
        self.timeline[b] += 1;
        self.timeline_max[b] = self.timeline_max[b].max(ns);
    }

    /// Adds another client's figures.
    pub fn merge(&mut self, other: &Stats) {
        self.sent += other.sent;
        self.completed += other.completed;
        self.lost += other.lost;
        for (a, b) in self.rcodes.iter_mut().zip(other.rcodes) {
            *a += b;
        }
        self.request_bytes += other.request_bytes;
        self.response_bytes += other.response_bytes;
        self.last_event = self.last_event.max(other.last_event);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
        let _ = self.histogram.add(&other.histogram);
        if self.timeline.len() < other.timeline.len() {
            self.timeline.resize(other.timeline.len(), 0);
            self.timeline_max.resize(other.timeline.len(), 0);
        }
        for (i, (n, m)) in other.timeline.iter().zip(&other.timeline_max).enumerate() {
            self.timeline[i] += n;
            self.timeline_max[i] = self.timeline_max[i].max(*m);
        }
    }

    /// Seconds from the start to the last query sent or reply received.
    pub fn run_time(&self) -> f64 {
        self.last_event.as_secs_f64()
    }

    /// Replies per second of run time.
    pub fn qps(&self) -> f64 {
        self.completed as f64 / self.run_time().max(1e-9)
    }

    /// Mean latency in seconds.
    pub fn mean(&self) -> f64 {
        if self.completed == 0 {
            return 0.0;
        }
        self.sum_ns / self.completed as f64 / 1e9
    }

    /// Standard deviation of latency in seconds (population).
    pub fn stddev(&self) -> f64 {
        if self.completed == 0 {
            return 0.0;
        }
        let n = self.completed as f64;
        let mean = self.sum_ns / n;
        ((self.sum_sq_ns / n - mean * mean).max(0.0)).sqrt() / 1e9
    }

    /// Latency (seconds) at quantile `q` (0.99 = p99), from the histogram.
    pub fn percentile(&self, q: f64) -> f64 {
        if self.completed == 0 {
            return 0.0;
        }
        self.histogram.value_at_quantile(q) as f64 / 1e9
    }

    fn min_s(&self) -> f64 {
        if self.completed == 0 {
            0.0
        } else {
            self.min.as_secs_f64()
        }
    }

    /// The statistics block, laid out like dnsperf's, plus percentiles.
    pub fn block(&self) -> String {
        let pct = |n: u64| {
            if self.sent == 0 {
                0.0
            } else {
                n as f64 * 100.0 / self.sent as f64
            }
        };
        let mut s = String::new();
        let _ = writeln!(s, "Statistics:\n");
        let _ = writeln!(s, "  Queries sent:         {}", self.sent);
        let _ = writeln!(
            s,
            "  Queries completed:    {} ({:.2}%)",
            self.completed,
            pct(self.completed)
        );
        let _ = writeln!(
            s,
            "  Queries lost:         {} ({:.2}%)\n",
            self.lost,
            pct(self.lost)
        );
        let codes: Vec<String> = self
            .rcodes
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| {
                format!(
                    "{} {} ({:.2}%)",
                    RCODES[i],
                    n,
                    *n as f64 * 100.0 / self.completed.max(1) as f64
                )
            })
            .collect();
        let _ = writeln!(s, "  Response codes:       {}", codes.join(", "));
        let _ = writeln!(
            s,
            "  Average packet size:  request {}, response {}",
            self.request_bytes / self.sent.max(1),
            self.response_bytes / self.completed.max(1)
        );
        let _ = writeln!(s, "  Run time (s):         {:.6}", self.run_time());
        let _ = writeln!(s, "  Queries per second:   {:.6}\n", self.qps());
        let _ = writeln!(
            s,
            "  Average Latency (s):  {:.6} (min {:.6}, max {:.6})",
            self.mean(),
            self.min_s(),
            self.max.as_secs_f64()
        );
        let _ = writeln!(s, "  Latency StdDev (s):   {:.6}", self.stddev());
        let _ = writeln!(
            s,
            "  Latency percentiles (s): p50 {:.6}, p90 {:.6}, p99 {:.6}, p99.9 {:.6}",
            self.percentile(0.5),
            self.percentile(0.9),
            self.percentile(0.99),
            self.percentile(0.999)
        );
        s
    }

    /// The figures as one JSON object.
    pub fn json(&self) -> String {
        let mut codes = serde_json::Map::new();
        for (i, n) in self.rcodes.iter().enumerate() {
            if *n > 0 {
                codes.insert(RCODES[i].to_string(), (*n).into());
            }
        }
        let v = serde_json::json!({
            "queries_sent": self.sent,
            "queries_completed": self.completed,
            "queries_lost": self.lost,
            "response_codes": codes,
            "avg_request_size": self.request_bytes as f64 / self.sent.max(1) as f64,
            "avg_response_size": self.response_bytes as f64 / self.completed.max(1) as f64,
            "run_time_s": self.run_time(),
            "qps": self.qps(),
            "latency_s": {
                "avg": self.mean(),
                "min": self.min_s(),
                "max": self.max.as_secs_f64(),
                "stddev": self.stddev(),
                "p50": self.percentile(0.5),
                "p90": self.percentile(0.9),
                "p99": self.percentile(0.99),
                "p99_9": self.percentile(0.999),
            },
            "timeline": {
                "interval_s": BUCKET.as_secs_f64(),
                "replies": self.timeline,
                "max_latency_s": self.timeline_max.iter().map(|n| *n as f64 / 1e9).collect::<Vec<_>>(),
            },
        });
        v.to_string()
    }
}
