//! The report of a run: its figures beside the seed's, as markdown
//! (`docs/scenario.md`) and as one JSON object (`--json`).
//!
//! ```text
//!  Plan + machine + loads + perf Stats ×3 + steady import + signing
//!       + signed-zone check + freshness ─► Report ─┬─ markdown()
//!                                                  └─ json()
//! ```

use super::probe::Freshness;
use super::scrape::ImportRun;
use super::signed_check::SignedCheck;
use super::{
    Plan, BIG_APEX, SECURE_APEX, SEED_FIRST_LAST, SEED_HOT, SEED_IMPORT_RATE, SEED_RECORDS,
};
use crate::perf::Stats;
use std::fmt::Write as _;

/// One client's figures.
#[derive(Clone, Debug)]
pub struct ClientFigures {
    /// first K / last K / hot.
    pub label: String,
    /// The seed's qps for this client.
    pub seed_qps: f64,
    /// Queries sent.
    pub sent: u64,
    /// Replies matched.
    pub completed: u64,
    /// Without a reply within 5 s.
    pub lost: u64,
    /// NOERROR replies.
    pub noerror: u64,
    /// Completed per second.
    pub qps: f64,
    /// Mean latency (s).
    pub avg: f64,
    /// p99 latency (s).
    pub p99: f64,
    /// Largest latency (s).
    pub max: f64,
}

impl ClientFigures {
    /// The figures of the client `label` from its statistics.
    pub(super) fn new(label: &str, seed_qps: f64, s: &Stats) -> ClientFigures {
        ClientFigures {
            label: label.into(),
            seed_qps,
            sent: s.sent,
            completed: s.completed,
            lost: s.lost,
            noerror: s.rcodes[0],
            qps: s.qps(),
            avg: s.mean(),
            p99: s.percentile(0.99),
            max: s.max.as_secs_f64(),
        }
    }
}

/// Everything the report says.
#[derive(Clone, Debug)]
pub struct Report {
    /// The command line.
    pub command: String,
    /// UTC time of the start.
    pub started: String,
    /// Sizes.
    pub plan: Plan,
    /// Cores, memory, OS, database, load.
    pub machine: Vec<(String, String)>,
    /// The load phase: big zone, small zones, the zone to sign.
    pub loads: Vec<ImportRun>,
    /// The three clients.
    pub clients: Vec<ClientFigures>,
    /// The steady import.
    pub steady: ImportRun,
    /// The steady import while the clients ran (records, seconds), from its
    /// progress document.
    pub steady_window: Option<(u64, f64)>,
    /// `secure-zone`: seconds, and whether it finished.
    pub signing: (f64, bool),
    /// The signer's last output line.
    pub signing_line: String,
    /// The signed zone checked at the end (transfer, `dnssec-verify`, every
    /// steady-import name present), when it was signed.
    pub check: Option<SignedCheck>,
    /// `secure-zone` of the same zone again after the run, with nothing
    /// else writing: seconds.
    pub quiet_sign: Option<f64>,
    /// `mongodns-sign cleanup` after the check (the version replaced by
    /// the run's `secure-zone` deleted): its last line.
    pub cleanup: Option<String>,
    /// Freshness samples.
    pub freshness: Freshness,
    /// The note given with --note.
    pub note: Option<String>,
}

impl Report {
    /// The report as markdown (docs/scenario.md).
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        self.heading(&mut o);
        self.machine(&mut o);
        self.sizes(&mut o);
        self.loading(&mut o);
        self.clients(&mut o);
        self.writers(&mut o);
        self.freshness(&mut o);
        o
    }

    /// The title, the command line and the note.
    fn heading(&self, o: &mut String) {
        let _ = writeln!(o, "# The seed scenario, replayed\n");
        let _ = writeln!(
            o,
            "Written by `mongodns-perf scenario seed-2011` (`loadtools/src/scenario/`); \
             how to run it and how to read it: `docs/load-tools.md`.\n"
        );
        let _ = writeln!(
            o,
            "Run of {}:\n\n```sh\n{}\n```\n",
            self.started, self.command
        );
        if let Some(n) = &self.note {
            let _ = writeln!(o, "{n}\n");
        }
    }

    /// This machine beside the seed's.
    fn machine(&self, o: &mut String) {
        let _ = writeln!(o, "## Machine\n\n| | |\n|---|---|");
        for (k, v) in &self.machine {
            let _ = writeln!(o, "| {k} | {v} |");
        }
        let _ = writeln!(
            o,
            "\nThe seed's machine: 6 cores (AMD, 3.2 GHz), 16 GB, RAID 5 of 6 SATA disks; \
             PowerDNS with its MongoDB backend, threads=6, default caches.\n"
        );
    }

    /// The sizes of the run beside the seed's.
    fn sizes(&self, o: &mut String) {
        let p = &self.plan;
        let _ = writeln!(
            o,
            "## Sizes (scale {})\n\n| | seed | this run |\n|---|---|---|",
            scale_text(p.scale)
        );
        let rows = [
            (
                "records in the big zone (example.com.)",
                thousands(SEED_RECORDS as f64),
                thousands(p.big_records as f64),
            ),
            (
                "other zones (7 records each here)",
                thousands(SEED_RECORDS as f64),
                thousands(p.small_zones as f64),
            ),
            (
                "zone signed by secure-zone",
                "example.com. (16 M records)".into(),
                if p.sign_apex == SECURE_APEX {
                    format!(
                        "{SECURE_APEX} ({} records)",
                        thousands(p.sign_records as f64)
                    )
                } else {
                    format!(
                        "{} ({} records), while the import writes into it",
                        p.sign_apex,
                        thousands(p.big_records as f64)
                    )
                },
            ),
            (
                "steady import (records/s)",
                format!("≥ {}", thousands(SEED_IMPORT_RATE)),
                thousands(p.import_rate),
            ),
            (
                "first-K / last-K query files (names)",
                thousands(SEED_FIRST_LAST as f64),
                thousands(p.first_last as f64),
            ),
            (
                "hot set (names)",
                thousands(SEED_HOT as f64),
                thousands(p.hot as f64),
            ),
            ("duration (s)", "600".into(), format!("{}", p.duration)),
        ];
        for (a, b, c) in rows {
            let _ = writeln!(o, "| {a} | {b} | {c} |");
        }
    }

    /// The imports before the run.
    fn loading(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "\n## Loading (before the run)\n\n| import | records | seconds | records/s |\n|---|---|---|---|"
        );
        for l in &self.loads {
            let _ = writeln!(
                o,
                "| {} | {} | {:.1} | {} |",
                l.what,
                thousands(l.records as f64),
                l.seconds,
                thousands(l.rate)
            );
        }
    }

    /// The three clients beside the seed's.
    fn clients(&self, o: &mut String) {
        let _ = writeln!(
            o,
            "\n## During the run: three clients, the importer and secure-zone at once\n\n\
             | client | seed qps | qps | completed | lost | NOERROR | avg latency | p99 latency | max latency (seed: 1.04 s) |\n\
             |---|---|---|---|---|---|---|---|---|"
        );
        for c in &self.clients {
            let _ = writeln!(
                o,
                "| {} | {} | **{}** | {} | {} | {} | {} | {} | {} |",
                c.label,
                thousands(c.seed_qps),
                thousands(c.qps),
                thousands(c.completed as f64),
                thousands(c.lost as f64),
                thousands(c.noerror as f64),
                ms(c.avg),
                ms(c.p99),
                ms(c.max)
            );
        }
    }

    /// The importer, the signer and the check of the signed zone.
    fn writers(&self, o: &mut String) {
        let p = &self.plan;
        let s = &self.steady;
        let target = p.import_rate;
        let _ = writeln!(o, "\n| | target | this run |\n|---|---|---|");
        if s.finished {
            let _ = writeln!(
                o,
                "| steady import into {} | {} records/s | **{} records/s** ({} records in {:.1} s{}) |",
                p.import_apex,
                thousands(target),
                thousands(s.rate),
                thousands(s.records as f64),
                s.seconds,
                if s.rate >= 0.95 * target { "" } else { "; below the target" }
            );
        } else {
            let _ = writeln!(
                o,
                "| steady import into {} | {} records/s | {} |",
                p.import_apex,
                thousands(target),
                s.line
            );
        }
        if let Some((records, secs)) = self.steady_window {
            let _ = writeln!(
                o,
                "| the same, while the clients ran (its progress document) | {} records/s | {} records/s ({} records in {:.1} s) |",
                thousands(target),
                thousands(records as f64 / secs),
                thousands(records as f64),
                secs
            );
        }
        let (secs, finished) = self.signing;
        let _ = writeln!(
            o,
            "| secure-zone {} ({} records), with the import running | (seed: \"took some time\") | {} |",
            p.sign_apex,
            thousands(if p.sign_apex == SECURE_APEX { p.sign_records } else { p.big_records } as f64),
            if finished {
                format!("**{secs:.1} s**")
            } else {
                self.signing_line.replace('|', "\\|")
            }
        );
        if let Some(c) = &self.cleanup {
            let _ = writeln!(
                o,
                "| the replaced version deleted after the check (`mongodns-sign cleanup`) | | {} |",
                c.replace('|', "\\|")
            );
        }
        if let Some(q) = self.quiet_sign {
            let _ = writeln!(
                o,
                "| secure-zone {} again after the run, nothing else writing | | {q:.1} s |",
                p.sign_apex
            );
        }
        if let Some(c) = &self.check {
            let _ = writeln!(
                o,
                "| the signed zone at the end (AXFR, `dnssec-verify`) | verifies, holds every imported record | {}: {} records (AXFR in {:.1} s); {} of {} steady-import names missing; {} |",
                if c.passed() { "**passed**" } else { "**FAILED**" },
                thousands(c.records as f64),
                c.transfer_secs,
                c.missing,
                c.expected,
                c.verdict.replace('|', "\\|")
            );
        }
    }

    /// Freshness, and how to read the tables.
    fn freshness(&self, o: &mut String) {
        let p = &self.plan;
        let f = &self.freshness;
        let fresh = match (f.median(), f.max()) {
            (Some(med), Some(max)) => format!(
                "median **{}**, max {} ({} of {} samples)",
                ms(med),
                ms(max),
                f.delays.len(),
                f.samples
            ),
            _ => format!("not measured (0 of {} samples answered)", f.samples),
        };
        let _ = writeln!(
            o,
            "| freshness: record in the database → answered by the server | (not in the seed) | {fresh} |"
        );
        let _ = writeln!(
            o,
            "\nqps = replies ÷ run time of each client; p99 from its latency histogram; a query \
             without a reply in 5 s is lost. Freshness: the probe sees the node of a name of the \
             steady import in the database (an `_id` read every 10 ms), then asks the server every \
             10 ms until it answers it; the server had NXDOMAIN for it in its caches before the run."
        );
        if p.import_apex == BIG_APEX {
            let _ = writeln!(
                o,
                "\nThe steady import merges into {BIG_APEX}, the zone the three clients ask, and \
                 publishes what it wrote every 200 ms; each publish voids the server's cached \
                 replies for that zone, which are rebuilt from its record cache: only the names \
                 the import wrote are read again (change records, docs/caches.md). \
                 `--import-into small` puts the import into another zone."
            );
        }
    }

    /// The figures as one JSON object.
    pub fn json(&self) -> String {
        use serde_json::json;
        let clients: Vec<_> = self
            .clients
            .iter()
            .map(|c| {
                json!({"label": c.label, "seed_qps": c.seed_qps, "sent": c.sent,
                       "completed": c.completed, "lost": c.lost, "noerror": c.noerror,
                       "qps": c.qps, "avg_s": c.avg, "p99_s": c.p99, "max_s": c.max})
            })
            .collect();
        let loads: Vec<_> = self
            .loads
            .iter()
            .map(|l| json!({"what": l.what, "records": l.records, "seconds": l.seconds, "rate": l.rate}))
            .collect();
        json!({
            "scale": self.plan.scale,
            "duration_s": self.plan.duration,
            "big_records": self.plan.big_records,
            "small_zones": self.plan.small_zones,
            "sign_records": self.plan.sign_records,
            "import_apex": self.plan.import_apex,
            "loads": loads,
            "clients": clients,
            "import": {"target_rate": self.plan.import_rate, "planned_records": self.plan.import_records,
                       "finished": self.steady.finished, "records": self.steady.records,
                       "seconds": self.steady.seconds, "rate": self.steady.rate,
                       "window": self.steady_window.map(|(r, s)| json!({"records": r, "seconds": s}))},
            "signing": {"finished": self.signing.1, "seconds": self.signing.0, "zone": self.plan.sign_apex,
                        "quiet_seconds": self.quiet_sign, "cleanup": self.cleanup,
                        "check": self.check.as_ref().map(|c| json!({"passed": c.passed(), "records": c.records,
                            "verified": c.verified, "transfer_s": c.transfer_secs, "expected": c.expected, "missing": c.missing, "verdict": c.verdict}))},
            "freshness": {"samples": self.freshness.samples, "delays_s": self.freshness.delays},
        })
        .to_string()
    }
}

/// `n` rounded, with thousands separators (`35,714`).
fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n);
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// Seconds as `1.23 s` or `4.5 ms`.
fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

/// A scale as `1/100` when it is one over a whole number.
fn scale_text(s: f64) -> String {
    let inv = 1.0 / s;
    if (inv - inv.round()).abs() < 1e-6 {
        format!("1/{}", inv.round() as u64)
    } else {
        format!("{s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print() {
        assert_eq!(thousands(4359.1), "4,359");
        assert_eq!(thousands(35714.4), "35,714");
        assert_eq!(scale_text(0.01), "1/100");
    }
}
