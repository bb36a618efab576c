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
//! Every child is held by a [`Children`] guard that kills it when the run
//! ends, fails or is interrupted (SIGINT, SIGTERM). The seed's numbers are
//! those of `/work/shared/seeds/004_*.txt` (PowerDNS with its MongoDB
//! backend, 2011).

use crate::perf::{self, PerfConfig, Queries, QueryOptions, Stats};
use crate::zonegen::{self, BigZone, Mix, Selection, SmallZones};
use backend_mongo::{Name, RType, Store, ZoneInfo};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

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

/// Flags of `mongodns-perf scenario`.
#[derive(clap::Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// Which scenario: `seed-2011` (the only one).
    pub name: String,
    /// Fraction of the seed's sizes and import rate: `1/100` or `0.01`.
    #[arg(long, default_value = "1/100", value_parser = parse_scale)]
    pub scale: f64,
    /// Seconds the three clients, the importer and the signer run together.
    #[arg(long, default_value_t = 60.0, value_parser = parse_positive)]
    pub duration: f64,
    /// Small zones (7 records each). Default: 16,000,000 × scale ÷ 16
    /// (FerretDB writes the seed's ratio too slowly; docs/scenario.md).
    #[arg(long)]
    pub small_zones: Option<u64>,
    /// Which zone `secure-zone` signs during the run: `import` (the zone
    /// the steady import writes into, as the seed's users did) or
    /// `separate` (secure.test., a zone of its own).
    #[arg(long, default_value = "import", value_parser = ["import", "separate"])]
    pub sign_zone: String,
    /// Records of the zone `secure-zone` signs with `--sign-zone separate`
    /// (secure.test.). Default: 16,000,000 × scale ÷ 10.
    #[arg(long)]
    pub sign_records: Option<u64>,
    /// Records per second of the steady import. Default: 7,500 × scale.
    #[arg(long, value_parser = parse_positive)]
    pub import_rate: Option<f64>,
    /// Records of the steady import's file. Default: rate × duration (with a
    /// high --import-rate, cap it to measure the most this machine sustains).
    #[arg(long)]
    pub import_records: Option<u64>,
    /// Names in the first-K and last-K query files. Default: 500,000 × scale.
    #[arg(long)]
    pub first_last: Option<u64>,
    /// Zone the steady import merges into: `big` (example.com., the zone
    /// the clients ask: each publish voids its cached answers) or `small`
    /// (the first small zone).
    #[arg(long, default_value = "big", value_parser = ["big", "small"])]
    pub import_into: String,
    /// Names in the hot query file.
    #[arg(long, default_value_t = SEED_HOT)]
    pub hot: u64,
    /// Sockets per client (each of the three `mongodns-perf` runs).
    #[arg(long, default_value_t = 2)]
    pub perf_sockets: usize,
    /// Queries outstanding per client.
    #[arg(long, default_value_t = 100)]
    pub perf_outstanding: usize,
    /// Freshness samples: names of the steady import watched until answered.
    #[arg(long, default_value_t = 5)]
    pub freshness_samples: usize,
    /// Address the server listens on (UDP and TCP).
    #[arg(long, default_value = "127.0.0.1:5399")]
    pub listen: SocketAddr,
    /// The database server.
    #[arg(
        long,
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017/?directConnection=true"
    )]
    pub mongodb_uri: String,
    /// Database for the scenario: dropped at the start (and at the end
    /// unless --keep-data).
    #[arg(long, default_value = "mongodns_scenario")]
    pub database: String,
    /// Keep the database and the work directory after the run.
    #[arg(long)]
    pub keep_data: bool,
    /// Where mongodns-server, mongodns-import and mongodns-sign are
    /// (default: the directory of this program).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Extra flag for mongodns-server (repeat), e.g. --server-arg=--workers=1.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,
    /// Directory for the generated files and logs (default: a new one
    /// under the system's temporary directory).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Markdown report to write.
    #[arg(long, default_value = "docs/scenario.md")]
    pub report: PathBuf,
    /// A sentence for the report (e.g. that the machine was shared).
    #[arg(long)]
    pub note: Option<String>,
    /// Also print the figures as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the signer and the importer after the clients stop.
    #[arg(long, default_value_t = 1800.0, value_parser = parse_positive)]
    pub finish_timeout: f64,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 2011)]
    pub seed: u64,
}

/// Parses `1/100`, `0.01` or `1` (a fraction in (0, 1]).
pub fn parse_scale(text: &str) -> Result<f64, String> {
    let value = match text.split_once('/') {
        Some((a, b)) => {
            let a: f64 = a
                .trim()
                .parse()
                .map_err(|_| format!("{a:?} is not a number"))?;
            let b: f64 = b
                .trim()
                .parse()
                .map_err(|_| format!("{b:?} is not a number"))?;
            if b == 0.0 {
                return Err("division by zero".into());
            }
            a / b
        }
        None => text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a fraction like 1/100 or 0.01"))?,
    };
    if !(value > 0.0 && value <= 1.0) {
        return Err(format!("{text} is not in (0, 1]"));
    }
    Ok(value)
}

fn parse_positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

/// Sizes of one run, from the flags.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scale.
    pub scale: f64,
    /// Records of the big zone.
    pub big_records: u64,
    /// Small zones.
    pub small_zones: u64,
    /// Records of the zone signed during the run.
    pub sign_records: u64,
    /// Steady import rate (records per second).
    pub import_rate: f64,
    /// Records of the steady import (rate × duration).
    pub import_records: u64,
    /// Names in the first-K and last-K files.
    pub first_last: u64,
    /// Apex of the zone the steady import merges into.
    pub import_apex: String,
    /// Apex of the zone `secure-zone` signs during the run.
    pub sign_apex: String,
    /// Names in the hot file.
    pub hot: u64,
    /// Seconds of load.
    pub duration: f64,
}

impl Plan {
    /// The sizes for `args`; errors name the flag.
    pub fn new(args: &ScenarioArgs) -> Result<Plan, String> {
        let s = args.scale;
        let scaled = |n: u64| ((n as f64 * s).round() as u64).max(1);
        let big_records = scaled(SEED_RECORDS).max(zonegen::FIXED_RECORDS + 10);
        let small_zones = args
            .small_zones
            .unwrap_or_else(|| scaled(SEED_RECORDS) / SMALL_ZONES_DIVISOR);
        let sign_records = args
            .sign_records
            .unwrap_or_else(|| scaled(SEED_RECORDS) / 10)
            .max(zonegen::FIXED_RECORDS + 1);
        let import_rate = args.import_rate.unwrap_or(SEED_IMPORT_RATE * s);
        let import_records = args
            .import_records
            .unwrap_or((import_rate * args.duration).round() as u64)
            .max(1);
        let first_last = args.first_last.unwrap_or_else(|| scaled(SEED_FIRST_LAST));
        if first_last == 0 || args.hot == 0 {
            return Err("--first-last and --hot must be at least 1".into());
        }
        if args.perf_sockets == 0 || args.perf_outstanding == 0 {
            return Err("--perf-sockets and --perf-outstanding must be at least 1".into());
        }
        if args.freshness_samples == 0 {
            return Err("--freshness-samples must be at least 1".into());
        }
        let names = BigZone::new(BIG_APEX, args.seed, big_records).name_count();
        if first_last > names || args.hot > names {
            return Err(format!(
                "the big zone has {names} names at this scale: --first-last ({first_last}) \
                 and --hot ({}) must not exceed that",
                args.hot
            ));
        }
        let import_apex = if args.import_into == "small" {
            if small_zones == 0 {
                return Err("--import-into small needs --small-zones of at least 1".into());
            }
            SmallZones::new(args.seed, small_zones, SMALL_SUFFIX).apex(0)
        } else {
            BIG_APEX.to_string()
        };
        let sign_apex = if args.sign_zone == "separate" {
            SECURE_APEX.to_string()
        } else {
            import_apex.clone()
        };
        if args.listen.port() == 0 {
            return Err("--listen needs a port".into());
        }
        Ok(Plan {
            scale: s,
            big_records,
            small_zones,
            sign_records,
            import_rate,
            import_records,
            first_last,
            import_apex,
            sign_apex,
            hot: args.hot,
            duration: args.duration,
        })
    }
}

/// One `mongodns-import` run: its summary line, parsed.
#[derive(Clone, Debug, Default)]
pub struct ImportRun {
    /// What was imported.
    pub what: String,
    /// Records, from the summary line.
    pub records: u64,
    /// Seconds, from the summary line.
    pub seconds: f64,
    /// Records per second, from the summary line.
    pub rate: f64,
    /// The summary line, or why there is none.
    pub line: String,
    /// It exited 0 within the time allowed.
    pub finished: bool,
}

/// The number just before the word `unit` in `line` (`… 31.20 s, …`).
fn number_before(line: &str, unit: &str) -> Option<f64> {
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| w.trim_matches([',', ';', '(', ')', ':']))
        .collect();
    words
        .windows(2)
        .find(|w| w[1] == unit && w[0].parse::<f64>().is_ok())
        .and_then(|w| w[0].parse().ok())
}

/// Parses the numbers of `mongodns-import`'s summary line
/// (`imported N records …, S s, R records/s`): records, seconds, rate.
pub fn parse_import_line(line: &str) -> Option<(u64, f64, f64)> {
    Some((
        number_before(line, "records")? as u64,
        number_before(line, "s")?,
        number_before(line, "records/s")?,
    ))
}

/// The last line of the file at `path` that starts with `prefix`.
fn last_line_starting(path: &Path, prefix: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rfind(|l| l.starts_with(prefix))
        .unwrap_or_default()
        .to_string()
}

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
    fn new(label: &str, seed_qps: f64, s: &Stats) -> ClientFigures {
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
    pub check: Option<crate::signed_check::SignedCheck>,
    /// `secure-zone` of the same zone again after the run, with nothing
    /// else writing: seconds.
    pub quiet_sign: Option<f64>,
    /// Freshness samples.
    pub freshness: Freshness,
    /// The note given with --note.
    pub note: Option<String>,
}

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
            r = run(&args, &plan, &mut children) => r,
            s = interrupted() => Err(format!("interrupted by {s}; children stopped")),
        };
        children.kill_all().await;
        result
    })
}

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

/// The child processes of a run, killed when it ends.
#[derive(Default)]
struct Children {
    list: Vec<(String, Child)>,
}

impl Children {
    fn add(&mut self, name: &str, child: Child) -> usize {
        self.list.push((name.into(), child));
        self.list.len() - 1
    }

    /// Waits for child `i` at most `timeout`; kills it after that.
    /// Returns its exit status when it exited by itself.
    async fn wait(&mut self, i: usize, timeout: Duration) -> Option<std::process::ExitStatus> {
        let child = &mut self.list[i].1;
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = child.kill().await;
                None
            }
        }
    }

    /// Process id of child `i` (while it runs).
    fn pid(&self, i: usize) -> Option<u32> {
        self.list[i].1.id()
    }

    /// Has child `i` exited (and how)?
    fn exited(&mut self, i: usize) -> Option<std::process::ExitStatus> {
        self.list[i].1.try_wait().ok().flatten()
    }

    async fn kill_all(&mut self) {
        for (_, child) in self.list.iter_mut() {
            if child.try_wait().ok().flatten().is_none() {
                let _ = child.kill().await;
            }
        }
        self.list.clear();
    }
}

/// A program next to this one (or in --bin-dir).
fn program(args: &ScenarioArgs, name: &str) -> Result<PathBuf, String> {
    let dir = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program's directory: {e}"))?
            .parent()
            .map(Path::to_path_buf)
            .ok_or("cannot find this program's directory")?,
    };
    let path = dir.join(name);
    if !path.is_file() {
        return Err(format!(
            "{} not found (build the workspace: cargo build [--release] --workspace; or give --bin-dir DIR)",
            path.display()
        ));
    }
    Ok(path)
}

fn log(msg: impl AsRef<str>) {
    eprintln!("[scenario] {}", msg.as_ref());
}

fn spawn(
    children: &mut Children,
    name: &str,
    path: &Path,
    cmd_args: &[String],
    log_file: &Path,
) -> Result<usize, String> {
    let stderr =
        std::fs::File::create(log_file).map_err(|e| format!("{}: {e}", log_file.display()))?;
    let stdout = stderr
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_file.display()))?;
    let child = Command::new(path)
        .args(cmd_args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(children.add(name, child))
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn db_flags(args: &ScenarioArgs) -> Vec<String> {
    vec![
        "--mongodb-uri".into(),
        args.mongodb_uri.clone(),
        "--database".into(),
        args.database.clone(),
    ]
}

/// Runs `mongodns-import` to the end; its summary line parsed.
async fn import(
    args: &ScenarioArgs,
    children: &mut Children,
    work: &Path,
    what: &str,
    extra: &[&str],
) -> Result<ImportRun, String> {
    let path = program(args, "mongodns-import")?;
    let mut a = db_flags(args);
    a.extend(extra.iter().map(|s| s.to_string()));
    let log_file = work.join(format!("import-{}.log", what.replace(' ', "-")));
    log(format!("importing {what}"));
    let i = spawn(children, "mongodns-import", &path, &a, &log_file)?;
    let status = children
        .wait(i, Duration::from_secs_f64(args.finish_timeout))
        .await;
    let line = last_line_starting(&log_file, "imported ");
    match status {
        Some(s) if s.success() => {
            let (records, seconds, rate) = parse_import_line(&line)
                .ok_or_else(|| format!("import of {what}: no summary line in {line:?}"))?;
            log(format!("  {line}"));
            Ok(ImportRun {
                what: what.into(),
                records,
                seconds,
                rate,
                line,
                finished: true,
            })
        }
        Some(s) => Err(format!(
            "import of {what} failed ({s}):\n{}",
            tail(&log_file, 10)
        )),
        None => Err(format!(
            "import of {what} did not finish within {} s",
            args.finish_timeout
        )),
    }
}

/// Sends one query and returns (rcode, answers), or None on timeout.
async fn ask(server: SocketAddr, name: &Name, rtype: RType) -> Option<(u8, u16)> {
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

fn rand_id() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    zonegen::hash(t, u64::from(std::process::id())) as u16
}

/// Waits until the server answers the big zone's SOA.
async fn wait_ready(
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

/// The freshness probe: for each sample name of the steady import, notes
/// when its node is in the database, then asks the server every 10 ms
/// until it is answered. `asked` must already hold NXDOMAIN for each (the
/// caller asked before the import started).
async fn probe_freshness(
    store: Store,
    zone: ZoneInfo,
    server: SocketAddr,
    names: Vec<Name>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Freshness {
    use std::sync::atomic::Ordering;
    let mut result = Freshness {
        samples: names.len(),
        delays: Vec::new(),
    };
    // Index of the next sample not yet seen in the database (the importer
    // writes in file order, so they appear in this order).
    let mut next_db = 0;
    let mut seen: Vec<Option<Instant>> = vec![None; names.len()];
    let mut done = vec![false; names.len()];
    loop {
        if stop.load(Ordering::Relaxed) || done.iter().all(|d| *d) {
            break;
        }
        if next_db < names.len() {
            if let Ok(Some(_)) = store.get_node(&zone, &names[next_db]).await {
                seen[next_db] = Some(Instant::now());
                next_db += 1;
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

/// The whole run; children are killed by the caller.
async fn run(args: &ScenarioArgs, plan: &Plan, children: &mut Children) -> Result<(), String> {
    let started = utc_now();
    let server_bin = program(args, "mongodns-server")?;
    let import_bin = program(args, "mongodns-import")?;
    let sign_bin = program(args, "mongodns-sign")?;
    if let Some(dir) = args.report.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(format!(
                "--report {}: directory {} does not exist",
                args.report.display(),
                dir.display()
            ));
        }
    }
    let work = match &args.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("mongodns-scenario-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let store = Store::connect(&args.mongodb_uri, &args.database, Duration::from_secs(10))
        .await
        .map_err(|e| format!("database: {e}"))?;
    let mut machine = describe_machine(&store).await;

    // 1. Data.
    log(format!(
        "generating: big zone {} records, {} small zones, {} records to sign, {} steady-import records, in {}",
        plan.big_records,
        plan.small_zones,
        plan.sign_records,
        plan.import_records,
        work.display()
    ));
    let big = BigZone::new(BIG_APEX, args.seed, plan.big_records);
    let io = |e: std::io::Error| e.to_string();
    big.write_file(&work.join("big.zone")).map_err(io)?;
    let small = SmallZones::new(args.seed, plan.small_zones, SMALL_SUFFIX);
    if plan.small_zones > 0 {
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(work.join("small.zones")).map_err(io)?);
        small.write_multi(&mut out).map_err(io)?;
        std::io::Write::flush(&mut out).map_err(io)?;
    }
    if plan.sign_apex == SECURE_APEX {
        BigZone::new(SECURE_APEX, args.seed ^ 0x5EC, plan.sign_records)
            .write_file(&work.join("secure.zone"))
            .map_err(io)?;
    }
    let run_tag = format!("f{:x}-", rand_id());
    let mut fresh = BigZone::new(&plan.import_apex, args.seed ^ 0xF5E5, plan.import_records);
    fresh.bare = true;
    fresh.prefix = run_tag;
    fresh.write_file(&work.join("fresh.zone")).map_err(io)?;
    let files = [
        ("first", Selection::First(plan.first_last), plan.first_last),
        ("last", Selection::Last(plan.first_last), plan.first_last),
        ("hot", Selection::First(plan.hot), plan.hot),
    ];
    for (f, sel, n) in files {
        zonegen::write_queries_file(&big, sel, n, Mix::default(), &work.join(format!("{f}.txt")))
            .map_err(io)?;
    }

    // 2. Load.
    log(format!("dropping database {}", args.database));
    store
        .database()
        .drop()
        .await
        .map_err(|e| format!("dropping database {}: {e}", args.database))?;
    let w = |f: &str| work.join(f).display().to_string();
    let mut loads = Vec::new();
    let big_file = w("big.zone");
    loads.push(
        import(
            args,
            children,
            &work,
            "big zone",
            &[
                "--zone",
                BIG_APEX,
                "--replace",
                "--grace-ms",
                "0",
                &big_file,
            ],
        )
        .await?,
    );
    if plan.small_zones > 0 {
        let f = w("small.zones");
        loads.push(import(args, children, &work, "small zones", &[&f]).await?);
    }
    if plan.sign_apex == SECURE_APEX {
        let f = w("secure.zone");
        loads.push(
            import(
                args,
                children,
                &work,
                "zone to sign",
                &["--zone", SECURE_APEX, "--replace", "--grace-ms", "0", &f],
            )
            .await?,
        );
    }

    // 3. Server.
    let server_log = work.join("server.log");
    let mut sa = db_flags(args);
    sa.extend(["--listen".into(), args.listen.to_string()]);
    // The signed zone is checked at the end through a transfer.
    sa.extend(["--axfr-allow".into(), format!("{}/32", args.listen.ip())]);
    sa.extend(args.server_arg.iter().cloned());
    log(format!("starting mongodns-server on {}", args.listen));
    let si = spawn(children, "mongodns-server", &server_bin, &sa, &server_log)?;
    wait_ready(args.listen, children, si, &server_log).await?;

    let queries: Vec<Arc<Queries>> = ["first", "last", "hot"]
        .iter()
        .map(|f| {
            Queries::load(&work.join(format!("{f}.txt")), QueryOptions::default()).map(Arc::new)
        })
        .collect::<Result<_, _>>()?;

    // Freshness samples: spread over the steady import, asked once now so
    // the server holds NXDOMAIN for them.
    let fresh_names: Vec<_> = fresh.names().collect();
    let samples = args.freshness_samples.min(fresh_names.len());
    let mut sample_names = Vec::new();
    for k in 0..samples {
        let g = &fresh_names[(k + 1) * fresh_names.len() / (samples + 1)];
        let name: Name = fresh.fqdn(g).parse().map_err(|e| format!("{e}"))?;
        ask(args.listen, &name, RType::A).await;
        sample_names.push(name);
    }
    drop(fresh_names);
    let apex: Name = plan.import_apex.parse().map_err(|e| format!("{e}"))?;
    let zone = store
        .find_zone(&apex)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("zone {apex} is not in the database after its import"))?;

    // 4. Everything at once.
    machine.push(("load average at the start of the run".into(), loadavg()));
    log(format!(
        "running for {} s: 3 clients, import at {:.0} records/s into {}, secure-zone {}",
        plan.duration, plan.import_rate, plan.import_apex, plan.sign_apex
    ));
    let t0 = Instant::now();
    let fresh_file = w("fresh.zone");
    let rate = format!("{}", plan.import_rate);
    let mut ia = db_flags(args);
    ia.extend(
        [
            "--zone",
            &plan.import_apex,
            "--rate",
            &rate,
            "--no-resume",
            &fresh_file,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let import_log = work.join("import-steady.log");
    let ii = spawn(children, "mongodns-import", &import_bin, &ia, &import_log)?;
    let mut ga = db_flags(args);
    ga.extend([
        "--quiet".into(),
        "secure-zone".into(),
        plan.sign_apex.clone(),
    ]);
    let sign_log = work.join("sign.log");
    let gi = spawn(children, "mongodns-sign", &sign_bin, &ga, &sign_log)?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = tokio::spawn(probe_freshness(
        store.clone(),
        zone,
        args.listen,
        sample_names,
        stop.clone(),
    ));
    let config = PerfConfig {
        server: args.listen,
        duration: Some(Duration::from_secs_f64(plan.duration)),
        clients: args.perf_sockets,
        outstanding: args.perf_outstanding,
        max_qps: None,
        timeout: Duration::from_secs(5),
        tcp: false,
    };
    let runs: Vec<_> = queries
        .iter()
        .map(|q| tokio::spawn(perf::run(config.clone(), q.clone())))
        .collect();
    let mut stats = Vec::new();
    for r in runs {
        stats.push(r.await.map_err(|e| format!("client: {e}"))?);
    }
    let import_pid = children.pid(ii);
    let steady_window = store.list_progress().await.ok().and_then(|jobs| {
        let j = jobs.into_iter().find(|j| {
            j.id == format!("import:{}", plan.import_apex) && Some(j.pid) == import_pid
        })?;
        let secs = (j.updated_ms - j.started_ms) as f64 / 1000.0;
        (secs > 0.0).then_some((j.done, secs))
    });
    log("clients done; waiting for the importer and the signer");
    let finish = Duration::from_secs_f64(args.finish_timeout);
    let import_status = children.wait(ii, finish).await;
    let sign_status = children
        .wait(
            gi,
            finish
                .saturating_sub(t0.elapsed())
                .max(Duration::from_secs(1)),
        )
        .await;
    let sign_secs = t0.elapsed().as_secs_f64();
    let sign_secs = match &sign_status {
        Some(_) => {
            number_before(&last_line_starting(&sign_log, "secured "), "s").unwrap_or(sign_secs)
        }
        None => sign_secs,
    };
    // Give the last samples a moment after the import's end.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let freshness = probe.await.map_err(|e| format!("probe: {e}"))?;
    machine.push(("load average at the end".into(), loadavg()));
    if let Some(s) = children.exited(si) {
        return Err(format!(
            "mongodns-server exited during the run ({s}):\n{}",
            tail(&server_log, 10)
        ));
    }

    let steady_line = last_line_starting(&import_log, "imported ");
    let steady = match (&import_status, parse_import_line(&steady_line)) {
        (Some(s), Some((records, seconds, rate))) if s.success() => ImportRun {
            what: "steady import".into(),
            records,
            seconds,
            rate,
            line: steady_line,
            finished: true,
        },
        (Some(s), _) => {
            return Err(format!(
                "the steady import failed ({s}):\n{}",
                tail(&import_log, 10)
            ))
        }
        (None, _) => ImportRun {
            what: "steady import".into(),
            line: format!("not finished within {} s; killed", args.finish_timeout),
            ..Default::default()
        },
    };
    let signed = sign_status.is_some_and(|s| s.success());
    let (check, quiet_sign) = if signed {
        check_at_end(
            args,
            plan,
            children,
            &work,
            &fresh,
            &sign_bin,
            &import_status,
        )
        .await?
    } else {
        (None, None)
    };
    let signing_line = match &sign_status {
        Some(s) if s.success() => last_line_starting(&sign_log, "secured "),
        Some(s) => format!("failed ({s}): {}", tail(&sign_log, 3).replace('\n', " / ")),
        None => format!("not finished after {sign_secs:.0} s (killed)"),
    };
    if !signed {
        log(format!("secure-zone: {signing_line}"));
    }
    let labels = ["first K names", "last K names", "hot set"];
    let clients = stats
        .iter()
        .zip(labels)
        .zip(SEED_QPS)
        .map(|((s, l), q)| ClientFigures::new(l, q, s))
        .collect();
    let report = Report {
        command: std::env::args()
            .map(|a| {
                if a.contains([' ', '"', '$', '`']) {
                    format!("'{}'", a.replace('\'', "'\\''"))
                } else {
                    a
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        started,
        plan: plan.clone(),
        machine,
        loads,
        clients,
        steady,
        steady_window,
        signing: (sign_secs, signed),
        signing_line,
        check,
        quiet_sign,
        freshness,
        note: args.note.clone(),
    };
    let text = report.markdown();
    std::fs::write(&args.report, &text).map_err(|e| format!("{}: {e}", args.report.display()))?;
    eprintln!("{text}");
    log(format!("wrote {}", args.report.display()));
    if let Some(c) = report.check.as_ref().filter(|c| !c.passed()) {
        return Err(format!(
            "the zone signed during the run failed its check: {} of {} imported names missing; {}",
            c.missing, c.expected, c.verdict
        ));
    }
    if args.json {
        println!("{}", report.json());
    }
    children.kill_all().await;
    if !args.keep_data {
        let _ = store.database().drop().await;
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

/// After the run: the signed zone checked through a transfer (every name
/// of the steady import present when it finished), then `secure-zone` of
/// the same zone once more with nothing else writing, timed.
async fn check_at_end(
    args: &ScenarioArgs,
    plan: &Plan,
    children: &mut Children,
    work: &Path,
    fresh: &BigZone,
    sign_bin: &Path,
    import_status: &Option<std::process::ExitStatus>,
) -> Result<(Option<crate::signed_check::SignedCheck>, Option<f64>), String> {
    let imported_here =
        plan.sign_apex == plan.import_apex && import_status.is_some_and(|s| s.success());
    let expected: Vec<String> = if imported_here {
        fresh
            .names()
            .map(|g| fresh.fqdn(&g).to_ascii_lowercase())
            .collect()
    } else {
        Vec::new()
    };
    log(format!(
        "checking the signed zone {} (AXFR, dnssec-verify)",
        plan.sign_apex
    ));
    let (listen, apex, dir) = (args.listen, plan.sign_apex.clone(), work.to_path_buf());
    let check = tokio::task::spawn_blocking(move || {
        crate::signed_check::check_signed_zone(listen, &apex, expected.into_iter(), &dir)
    })
    .await
    .map_err(|e| format!("check: {e}"))?;
    log(format!(
        "signed zone: passed={} {}",
        check.passed(),
        check.verdict
    ));
    let mut ga = db_flags(args);
    ga.extend([
        "--quiet".into(),
        "secure-zone".into(),
        plan.sign_apex.clone(),
    ]);
    let log_file = work.join("sign-quiet.log");
    let t = Instant::now();
    let gi = spawn(children, "mongodns-sign", sign_bin, &ga, &log_file)?;
    let status = children
        .wait(gi, Duration::from_secs_f64(args.finish_timeout))
        .await;
    let quiet = status.filter(|s| s.success()).map(|_| {
        number_before(&last_line_starting(&log_file, "secured "), "s")
            .unwrap_or(t.elapsed().as_secs_f64())
    });
    Ok((Some(check), quiet))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    let (y, m, d) = backend_mongo::civil::civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Cores, memory, OS and database, for the report.
async fn describe_machine(store: &Store) -> Vec<(String, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown model".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|s| s.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let database = match store.build_info().await {
        Ok(info) => {
            let version = info.version.unwrap_or_else(|| "?".into());
            match info.ferretdb {
                Some(f) => {
                    format!("FerretDB {f} (answers as MongoDB {version}; docs/dev-database.md)")
                }
                None => format!("MongoDB {version}"),
            }
        }
        Err(e) => format!("unknown ({e})"),
    };
    vec![
        ("cores".into(), format!("{cores} ({model})")),
        (
            "memory".into(),
            format!("{:.1} GiB", mem_kb as f64 / 1024.0 / 1024.0),
        ),
        ("OS".into(), format!("{os}, Linux {}", kernel.trim())),
        ("database".into(), database),
    ]
}

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

fn ms(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1000.0)
    }
}

fn scale_text(s: f64) -> String {
    let inv = 1.0 / s;
    if (inv - inv.round()).abs() < 1e-6 {
        format!("1/{}", inv.round() as u64)
    } else {
        format!("{s}")
    }
}

impl Report {
    /// The report as markdown (docs/scenario.md).
    pub fn markdown(&self) -> String {
        let p = &self.plan;
        let mut o = String::new();
        let _ = writeln!(o, "# The seed scenario, replayed\n");
        let _ = writeln!(
            o,
            "Written by `mongodns-perf scenario seed-2011` (`loadtools/src/scenario.rs`); \
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
        let _ = writeln!(o, "## Machine\n\n| | |\n|---|---|");
        for (k, v) in &self.machine {
            let _ = writeln!(o, "| {k} | {v} |");
        }
        let _ = writeln!(
            o,
            "\nThe seed's machine: 6 cores (AMD, 3.2 GHz), 16 GB, RAID 5 of 6 SATA disks; \
             PowerDNS with its MongoDB backend, threads=6, default caches.\n"
        );
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
                "| the signed zone at the end (AXFR, `dnssec-verify`) | verifies, holds every imported record | {}: {} records; {} of {} steady-import names missing; {} |",
                if c.passed() { "**passed**" } else { "**FAILED**" },
                thousands(c.records as f64),
                c.missing,
                c.expected,
                c.verdict.replace('|', "\\|")
            );
        }
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
        o
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
                        "quiet_seconds": self.quiet_sign,
                        "check": self.check.as_ref().map(|c| json!({"passed": c.passed(), "records": c.records,
                            "verified": c.verified, "expected": c.expected, "missing": c.missing, "verdict": c.verdict}))},
            "freshness": {"samples": self.freshness.samples, "delays_s": self.freshness.delays},
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_lines_parse() {
        assert_eq!(parse_scale("1/100").unwrap(), 0.01);
        assert_eq!(parse_scale("0.5").unwrap(), 0.5);
        assert!(parse_scale("2").is_err());
        assert!(parse_scale("1/0").is_err());
        assert!(parse_scale("x").is_err());
        let line = "imported 160000 records into example.com. (serial 5, version 1; 0 stored by an earlier run): 160000 inserted, 0 merged, 31.20 s, 5128 records/s";
        assert_eq!(parse_import_line(line), Some((160000, 31.2, 5128.0)));
        let multi = "imported 70000 records in 10000 zones (0 already stored by an earlier run): 70000 inserted, 0 merged, 12.00 s, 5833 records/s";
        assert_eq!(parse_import_line(multi), Some((70000, 12.0, 5833.0)));
        assert_eq!(parse_import_line("error"), None);
        assert_eq!(thousands(4359.1), "4,359");
        assert_eq!(thousands(35714.4), "35,714");
        assert_eq!(scale_text(0.01), "1/100");
    }
}
