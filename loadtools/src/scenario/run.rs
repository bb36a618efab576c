//! `scenario::run`: the run as its phases, each handing on named state.
//!
//! ```text
//!  Programs::find ─► Setup::open (setup.rs: report dir, work dir, database, machine)
//!     ─► generate (zone and query files) ─► Fresh zone
//!     ─► load (mongodns-import × 3) ─► loads
//!     ─► ServerUp::start (mongodns-server, answering)
//!     ─► Clients::prepare ─► concurrent::run_all ─► During
//!     ─► settle::settle ─► Outcome ─► Report ─► publish ─► clean up
//! ```

use super::children::{db_flags, import, spawn, Children};
use super::concurrent::{self, Clients, During};
use super::machine::utc_now;
use super::probe::{rand_id, wait_log, wait_ready};
use super::report::{ClientFigures, Report};
use super::scrape::{tail, ImportRun};
use super::settle::{settle, Outcome};
use super::setup::{Programs, Setup};
use super::{log, Plan, ScenarioArgs, BIG_APEX, SECURE_APEX, SEED_QPS, SMALL_SUFFIX};
use crate::zonegen::{self, BigZone, Mix, Selection, SmallZones};
use std::path::{Path, PathBuf};

/// The whole run; children are killed by the caller.
pub(super) async fn run(
    args: &ScenarioArgs,
    plan: &Plan,
    children: &mut Children,
) -> Result<(), String> {
    let started = utc_now();
    let programs = Programs::find(args)?;
    let mut setup = Setup::open(args).await?;
    let fresh = generate(args, plan, &setup.work)?;
    let loads = load(args, plan, children, &setup).await?;
    let server = ServerUp::start(args, children, &programs, &setup.work).await?;
    let clients = Clients::prepare(args, plan, &setup, &fresh).await?;
    let during = concurrent::run_all(args, plan, children, &programs, &mut setup, clients).await?;
    server.check_alive(children)?;
    let outcome = settle(
        args,
        plan,
        children,
        &programs,
        &setup.work,
        &fresh,
        &during,
    )
    .await?;
    let report = assemble(
        args,
        plan,
        started,
        setup.machine.clone(),
        loads,
        during,
        outcome,
    );
    publish(args, &report)?;
    children.kill_all().await;
    if !args.keep_data {
        let _ = setup.store.database().drop().await;
        let _ = std::fs::remove_dir_all(&setup.work);
    }
    Ok(())
}

/// Phase 1: the zone files and the query files; returns the steady
/// import's zone (its names are the freshness samples and the check's).
fn generate(args: &ScenarioArgs, plan: &Plan, work: &Path) -> Result<BigZone, String> {
    log(format!(
        "generating: big zone {} records, {} small zones, {} records to sign, {} steady-import records, in {}",
        plan.big_records,
        plan.small_zones,
        plan.sign_records,
        plan.import_records,
        work.display()
    ));
    let io = |e: std::io::Error| e.to_string();
    let big = BigZone::new(BIG_APEX, args.seed, plan.big_records);
    big.write_file(&work.join("big.zone")).map_err(io)?;
    let small = SmallZones::new(args.seed, plan.small_zones, SMALL_SUFFIX);
    if plan.small_zones > 0 {
        let file = std::fs::File::create(work.join("small.zones")).map_err(io)?;
        let mut out = std::io::BufWriter::new(file);
        small.write_multi(&mut out).map_err(io)?;
        std::io::Write::flush(&mut out).map_err(io)?;
    }
    if plan.sign_apex == SECURE_APEX {
        BigZone::new(SECURE_APEX, args.seed ^ 0x5EC, plan.sign_records)
            .write_file(&work.join("secure.zone"))
            .map_err(io)?;
    }
    let mut fresh = BigZone::new(&plan.import_apex, args.seed ^ 0xF5E5, plan.import_records);
    fresh.bare = true;
    fresh.prefix = format!("f{:x}-", rand_id());
    fresh.write_file(&work.join("fresh.zone")).map_err(io)?;
    write_query_files(plan, &big, work).map_err(io)?;
    Ok(fresh)
}

/// The three clients' query files: first K, last K, hot set.
fn write_query_files(plan: &Plan, big: &BigZone, work: &Path) -> std::io::Result<()> {
    let files = [
        ("first", Selection::First(plan.first_last), plan.first_last),
        ("last", Selection::Last(plan.first_last), plan.first_last),
        ("hot", Selection::First(plan.hot), plan.hot),
    ];
    for (f, sel, n) in files {
        let path = work.join(format!("{f}.txt"));
        zonegen::write_queries_file(big, sel, n, Mix::default(), &path)?;
    }
    Ok(())
}

/// Phase 2: the database dropped, then the big zone, the small zones and
/// the zone to sign imported, one after the other.
async fn load(
    args: &ScenarioArgs,
    plan: &Plan,
    children: &mut Children,
    setup: &Setup,
) -> Result<Vec<ImportRun>, String> {
    log(format!("dropping database {}", args.database));
    setup
        .store
        .database()
        .drop()
        .await
        .map_err(|e| format!("dropping database {}: {e}", args.database))?;
    let work = &setup.work;
    let w = |f: &str| work.join(f).display().to_string();
    let replace = |apex, file| ["--zone", apex, "--replace", "--grace-ms", "0", file];
    let mut loads = Vec::new();
    let big = w("big.zone");
    loads.push(import(args, children, work, "big zone", &replace(BIG_APEX, &big)).await?);
    if plan.small_zones > 0 {
        let f = w("small.zones");
        loads.push(import(args, children, work, "small zones", &[&f]).await?);
    }
    if plan.sign_apex == SECURE_APEX {
        let f = w("secure.zone");
        let flags = replace(SECURE_APEX, &f);
        loads.push(import(args, children, work, "zone to sign", &flags).await?);
    }
    Ok(loads)
}

/// Phase 3: the server under test, started and answering.
struct ServerUp {
    /// Its index in the run's children.
    index: usize,
    /// Its log file.
    log: PathBuf,
}

impl ServerUp {
    /// Starts `mongodns-server` (transfers allowed to itself, for the
    /// check at the end) and waits until it answers the big zone's SOA.
    async fn start(
        args: &ScenarioArgs,
        children: &mut Children,
        programs: &Programs,
        work: &Path,
    ) -> Result<ServerUp, String> {
        let log_file = work.join("server.log");
        let mut sa = db_flags(args);
        sa.extend(["--listen".into(), args.listen.to_string()]);
        // The signed zone is checked at the end through a transfer.
        sa.extend(["--axfr-allow".into(), format!("{}/32", args.listen.ip())]);
        sa.extend(args.server_arg.iter().cloned());
        log(format!("starting mongodns-server on {}", args.listen));
        let index = spawn(
            children,
            "mongodns-server",
            &programs.server,
            &sa,
            &log_file,
        )?;
        wait_ready(args.listen, children, index, &log_file).await?;
        if let Some(text) = &args.wait_log {
            wait_log(text, children, index, &log_file).await?;
        }
        Ok(ServerUp {
            index,
            log: log_file,
        })
    }

    /// An error when the server exited during the run.
    fn check_alive(&self, children: &mut Children) -> Result<(), String> {
        match children.exited(self.index) {
            Some(s) => Err(format!(
                "mongodns-server exited during the run ({s}):\n{}",
                tail(&self.log, 10)
            )),
            None => Ok(()),
        }
    }
}

/// The report of the run, from what each phase found.
fn assemble(
    args: &ScenarioArgs,
    plan: &Plan,
    started: String,
    machine: Vec<(String, String)>,
    loads: Vec<ImportRun>,
    during: During,
    outcome: Outcome,
) -> Report {
    let labels = ["first K names", "last K names", "hot set"];
    let clients = during
        .stats
        .iter()
        .zip(labels)
        .zip(SEED_QPS)
        .map(|((s, l), q)| ClientFigures::new(l, q, s))
        .collect();
    Report {
        command: command_line(),
        started,
        plan: plan.clone(),
        machine,
        loads,
        clients,
        steady: outcome.steady,
        steady_window: during.steady_window,
        signing: (during.sign_secs, outcome.signed),
        signing_line: outcome.signing_line,
        check: outcome.check,
        quiet_sign: outcome.quiet_sign,
        cleanup: outcome.cleanup,
        freshness: during.freshness,
        note: args.note.clone(),
    }
}

/// This program's command line, quoted for a shell where needed.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.contains([' ', '"', '$', '`']) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The report written (--report) and printed; the signed zone's failed
/// check made the run's error; the JSON printed with --json.
fn publish(args: &ScenarioArgs, report: &Report) -> Result<(), String> {
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
    Ok(())
}
