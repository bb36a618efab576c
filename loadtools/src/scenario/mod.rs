//! The seed scenario: `mongodns-perf scenario seed-2011`.
//!
//! ```text
//!  flags ─► Plan (sizes = seed × scale) ─► zonegen files in the work dir
//!     │        big.zone, small.zones, secure.zone, fresh.zone, first/last/hot.txt
//!     ▼
//!  drop the scenario database ─► mongodns-import × 3 (big, small zones, secure)
//!     ▼
//!  mongodns-server (child) ─► wait until it answers the big zone's SOA
//!     ▼  all at once, for --duration:
//!     ├─ mongodns-import --rate R  (fresh-… names merged into the big zone)
//!     ├─ mongodns-sign secure-zone secure.test.
//!     ├─ perf::run × 3 (first K, last K, hot set), in this process
//!     └─ freshness probe: a fresh name appears in the database ─► answered?
//!     ▼
//!  wait for the importer and the signer ─► Report ─► markdown (--report)
//!                                                 └─ --json on stdout
//! ```
//!
//! One job per file:
//!
//! | file | job |
//! |---|---|
//! | `args.rs` | the flags ([`ScenarioArgs`]) and their parsers |
//! | `plan.rs` | the sizes of a run ([`Plan`]) |
//! | `setup.rs` | what a run needs first: the programs, the work directory, the database |
//! | `run.rs` | `run`: the phases in order, and the first three (data, load, server) |
//! | `concurrent.rs` | the phase where everything runs at once |
//! | `settle.rs` | the writers' outcome and the check of the signed zone |
//! | `children.rs` | the supervisor: child processes, their logs, time limits |
//! | `scrape.rs` | the children's summary lines read back from their logs |
//! | `probe.rs` | the scenario's own DNS probe: ready, freshness |
//! | `signed_check.rs` | the signed zone by AXFR, `dnssec-verify`, names present |
//! | `machine.rs` | the machine's description, load averages, the date |
//! | `report.rs` | the [`Report`], as markdown and JSON |
//!
//! Every child is held by a `Children` guard that kills it when the run
//! ends, fails or is interrupted (SIGINT, SIGTERM). The seed's numbers are
//! those of `/work/shared/seeds/004_*.txt` (PowerDNS with its MongoDB
//! backend, 2011).

mod args;
mod children;
mod concurrent;
mod machine;
mod plan;
mod probe;
mod report;
mod run;
mod scrape;
mod settle;
mod setup;
pub mod signed_check;

pub use args::{parse_scale, ScenarioArgs};
pub use plan::Plan;
pub use probe::Freshness;
pub use report::{ClientFigures, Report};
pub use scrape::{parse_import_line, ImportRun};

use children::Children;

/// The seed's figures (dnsperf, PowerDNS 2011): qps of the three clients.
pub const SEED_QPS: [f64; 3] = [4359.149303, 4375.941063, 35714.362440];
/// The seed's largest latency (seconds), the same for all three clients.
pub const SEED_MAX_LATENCY: f64 = 1.04;
/// Records in the seed's big zone, and zones besides it.
pub const SEED_RECORDS: u64 = 16_000_000;
/// The seed's import rate (records per second, "at minimum").
pub const SEED_IMPORT_RATE: f64 = 7500.0;
/// Names in the first/last query files of the seed.
pub const SEED_FIRST_LAST: u64 = 500_000;
/// The seed's hot set.
pub const SEED_HOT: u64 = 736;
/// Small zones by default: the seed's count × scale ÷ this (see docs/scenario.md).
pub const SMALL_ZONES_DIVISOR: u64 = 16;

const BIG_APEX: &str = "example.com.";
const SECURE_APEX: &str = "secure.test.";
const SMALL_SUFFIX: &str = "test.";

/// Runs a scenario (blocking; builds its own runtime).
pub fn main(args: ScenarioArgs) -> Result<(), String> {
    if args.name != "seed-2011" {
        return Err(format!(
            "unknown scenario {:?} (known: seed-2011)",
            args.name
        ));
    }
    let plan = Plan::new(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut children = Children::default();
        let result = tokio::select! {
            r = run::run(&args, &plan, &mut children) => r,
            s = interrupted() => Err(format!("interrupted by {s}; children stopped")),
        };
        children.kill_all().await;
        result
    })
}

/// Resolves with the signal's name on SIGINT or SIGTERM.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// A progress line on stderr.
fn log(msg: impl AsRef<str>) {
    eprintln!("[scenario] {}", msg.as_ref());
}
