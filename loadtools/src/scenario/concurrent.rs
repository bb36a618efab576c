//! Phase 4 of the run: everything at once, for --duration — the steady
//! import, `secure-zone`, three clients and the freshness probe.
//!
//! ```text
//!  Clients::prepare: query files loaded, freshness samples asked once
//!                    (NXDOMAIN cached), the import zone looked up
//!  run_all ─┬─ Writers::start: mongodns-import --rate R, mongodns-sign secure-zone
//!           ├─ probe_freshness (task)
//!           ├─ perf::run × 3 ─► Stats (and the importer's progress window)
//!           └─ Writers::wait (importer, then signer) ─► probe stopped ─► During
//! ```

use super::children::{db_flags, spawn, Children};
use super::machine::loadavg;
use super::probe::{ask, probe_freshness, Freshness};
use super::scrape::{last_line_starting, number_before};
use super::setup::{Programs, Setup};
use super::{log, Plan, ScenarioArgs};
use crate::perf::{self, PerfConfig, Queries, QueryOptions, Stats};
use crate::zonegen::BigZone;
use backend_mongo::Store;
use dns::{Name, RType, ZoneInfo};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the clients and the probe need, made before the load starts.
pub(super) struct Clients {
    /// The three query files: first K, last K, hot set.
    queries: Vec<Arc<Queries>>,
    /// Names of the steady import the probe watches.
    samples: Vec<Name>,
    /// The zone the steady import writes into, as served before it.
    zone: ZoneInfo,
}

impl Clients {
    /// Loads the query files, picks the freshness samples spread over the
    /// steady import and asks each once (so the server holds NXDOMAIN for
    /// them), and finds the import's zone.
    pub(super) async fn prepare(
        args: &ScenarioArgs,
        plan: &Plan,
        setup: &Setup,
        fresh: &BigZone,
    ) -> Result<Clients, String> {
        let queries: Vec<Arc<Queries>> = ["first", "last", "hot"]
            .iter()
            .map(|f| {
                let path = setup.work.join(format!("{f}.txt"));
                Queries::load(&path, QueryOptions::default()).map(Arc::new)
            })
            .collect::<Result<_, _>>()?;
        let samples = sample_names(args, fresh).await?;
        let apex: Name = plan.import_apex.parse().map_err(|e| format!("{e}"))?;
        let zone = setup
            .store
            .find_zone(&apex)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("zone {apex} is not in the database after its import"))?;
        Ok(Clients {
            queries,
            samples,
            zone,
        })
    }
}

/// --freshness-samples names spread over the steady import, each asked once.
async fn sample_names(args: &ScenarioArgs, fresh: &BigZone) -> Result<Vec<Name>, String> {
    let fresh_names: Vec<_> = fresh.names().collect();
    let samples = args.freshness_samples.min(fresh_names.len());
    let mut names = Vec::new();
    for k in 0..samples {
        let g = &fresh_names[(k + 1) * fresh_names.len() / (samples + 1)];
        let name: Name = fresh.fqdn(g).parse().map_err(|e| format!("{e}"))?;
        ask(args.listen, &name, RType::A).await;
        names.push(name);
    }
    Ok(names)
}

/// The two writers of the run: the steady import and `secure-zone`.
pub(super) struct Writers {
    /// The importer's index in the run's children.
    import: usize,
    /// Its log file.
    pub(super) import_log: PathBuf,
    /// The signer's index in the run's children.
    sign: usize,
    /// Its log file.
    pub(super) sign_log: PathBuf,
}

impl Writers {
    /// Starts `mongodns-import --rate R --no-resume fresh.zone` into the
    /// import zone and `mongodns-sign secure-zone --no-cleanup` of the zone
    /// to sign.
    fn start(
        args: &ScenarioArgs,
        plan: &Plan,
        children: &mut Children,
        programs: &Programs,
        work: &Path,
    ) -> Result<Writers, String> {
        let fresh_file = work.join("fresh.zone").display().to_string();
        let rate = format!("{}", plan.import_rate);
        let mut ia = db_flags(args);
        let steady = [
            "--zone",
            &plan.import_apex,
            "--rate",
            &rate,
            "--no-resume",
            &fresh_file,
        ];
        ia.extend(steady.iter().map(|s| s.to_string()));
        let import_log = work.join("import-steady.log");
        let import = spawn(
            children,
            "mongodns-import",
            &programs.import,
            &ia,
            &import_log,
        )?;
        // The run times the signing up to the switch; deleting the
        // replaced version is timed on its own after the check (settle.rs).
        let mut ga = db_flags(args);
        ga.extend([
            "--quiet".into(),
            "secure-zone".into(),
            "--no-cleanup".into(),
            plan.sign_apex.clone(),
        ]);
        let sign_log = work.join("sign.log");
        let sign = spawn(children, "mongodns-sign", &programs.sign, &ga, &sign_log)?;
        Ok(Writers {
            import,
            import_log,
            sign,
            sign_log,
        })
    }

    /// Waits for the importer, then the signer, within --finish-timeout of
    /// `t0`; the signer's seconds from its last line when it finished.
    async fn wait(
        &self,
        args: &ScenarioArgs,
        children: &mut Children,
        t0: Instant,
    ) -> (Option<ExitStatus>, Option<ExitStatus>, f64) {
        let finish = Duration::from_secs_f64(args.finish_timeout);
        let import_status = children.wait(self.import, finish).await;
        let rest = finish
            .saturating_sub(t0.elapsed())
            .max(Duration::from_secs(1));
        let sign_status = children.wait(self.sign, rest).await;
        let elapsed = t0.elapsed().as_secs_f64();
        let sign_secs = match &sign_status {
            Some(_) => number_before(&last_line_starting(&self.sign_log, "secured "), "s")
                .unwrap_or(elapsed),
            None => elapsed,
        };
        (import_status, sign_status, sign_secs)
    }
}

/// What happened while everything ran at once.
pub(super) struct During {
    /// The writers (their logs are read afterwards).
    pub(super) writers: Writers,
    /// The three clients' statistics.
    pub(super) stats: Vec<Stats>,
    /// The steady import while the clients ran: (records, seconds).
    pub(super) steady_window: Option<(u64, f64)>,
    /// How the importer exited (None: killed at the time limit).
    pub(super) import_status: Option<ExitStatus>,
    /// How the signer exited (None: killed at the time limit).
    pub(super) sign_status: Option<ExitStatus>,
    /// Seconds `secure-zone` took (or ran, when killed).
    pub(super) sign_secs: f64,
    /// The freshness probe's samples.
    pub(super) freshness: Freshness,
}

/// Runs the writers, the probe and the three clients together; returns
/// once the writers have ended and the probe has stopped.
pub(super) async fn run_all(
    args: &ScenarioArgs,
    plan: &Plan,
    children: &mut Children,
    programs: &Programs,
    setup: &mut Setup,
    clients: Clients,
) -> Result<During, String> {
    let load_start = ("load average at the start of the run".into(), loadavg());
    setup.machine.push(load_start);
    log(format!(
        "running for {} s: 3 clients, import at {:.0} records/s into {}, secure-zone {}",
        plan.duration, plan.import_rate, plan.import_apex, plan.sign_apex
    ));
    let t0 = Instant::now();
    let writers = Writers::start(args, plan, children, programs, &setup.work)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (store, listen) = (setup.store.clone(), args.listen);
    let probe = probe_freshness(store, clients.zone, listen, clients.samples, stop.clone());
    let probe = tokio::spawn(probe);
    let stats = run_clients(args, plan, &clients.queries).await?;
    let import_pid = children.pid(writers.import);
    let steady_window = steady_window(&setup.store, plan, import_pid).await;
    let figures: Vec<String> = ["first K", "last K", "hot set"]
        .iter()
        .zip(&stats)
        .map(|(name, s)| {
            format!(
                "{name} {:.0} qps, max {:.3} s",
                s.qps(),
                s.max.as_secs_f64()
            )
        })
        .collect();
    log(format!(
        "clients done ({}); waiting for the importer and the signer",
        figures.join("; ")
    ));
    let (import_status, sign_status, sign_secs) = writers.wait(args, children, t0).await;
    // Give the last samples a moment after the import's end.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let freshness = probe.await.map_err(|e| format!("probe: {e}"))?;
    setup
        .machine
        .push(("load average at the end".into(), loadavg()));
    Ok(During {
        writers,
        stats,
        steady_window,
        import_status,
        sign_status,
        sign_secs,
        freshness,
    })
}

/// The three clients (`perf::run` in this process) for --duration.
async fn run_clients(
    args: &ScenarioArgs,
    plan: &Plan,
    queries: &[Arc<Queries>],
) -> Result<Vec<Stats>, String> {
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
    Ok(stats)
}

/// The steady import's records and seconds so far, from its progress
/// document (the one of the importer with `pid`).
async fn steady_window(store: &Store, plan: &Plan, pid: Option<u32>) -> Option<(u64, f64)> {
    let jobs = store.list_progress().await.ok()?;
    let id = format!("import:{}", plan.import_apex);
    let j = jobs
        .into_iter()
        .find(|j| j.id == id && Some(j.pid) == pid)?;
    let secs = (j.updated_ms - j.started_ms) as f64 / 1000.0;
    (secs > 0.0).then_some((j.done, secs))
}
