//! `mongodns-server`: configuration, start-up checks, the serve loops and
//! the signals.
//!
//! ```text
//!  flags > env > --config file > defaults (config.rs) ─► --check-config: print, exit
//!     ─► init_logging (text|json, reloadable filter)
//!  run: connect (MongoDB, read preference, ensure indexes) ─► pipeline_config
//!     (TSIG keys, NSID) ─► rate_limiter ─► Caches::start (registry poller, resident
//!     zones' keeper when --resident-mb > 0) ─► start_notify (NOTIFY out, told
//!     by the poller) ─► responder
//!     ─► open_query_log ─► metrics ─► start_control ─► start_api ─► Signals::install
//!     ─► serve_dns (UDP: one socket per worker per address; TCP) ─► Signals::wait
//!     ─► drain ─► close the query log
//!  SIGHUP  ─► re-read the file: log filter, query_log_sample; reopen the query log
//!  SIGTERM ─► stop accepting ─► wait for queries in flight (bounded) ─► flush ─► exit 0
//! ```

use backend_mongo::{ReadFrom, Store};
use mongodns_server::api::ApiState;
use mongodns_server::backend::Backend;
use mongodns_server::cache::{Counters, PacketCache, RecordCache, RecordCacheConfig};
use mongodns_server::catalog::keep_catalog;
use mongodns_server::config::{canonical_read_preference, Cli, Config, LogFormat, Resolved};
use mongodns_server::control::{serve_control, Control, ControlLimits};
use mongodns_server::edns::options::parse_nsid;
use mongodns_server::frontend::{spread, tcp, udp};
use mongodns_server::handler::Handler;
use mongodns_server::notify;
use mongodns_server::observe::{Observed, QueryMetrics};
use mongodns_server::pipeline::{PipelineConfig, ReplyCache, Responder};
use mongodns_server::querylog::{Destination, QueryLog, QueryLogConfig};
use mongodns_server::resident::{Busy, LoadPacing, Residency, ResidentConfig, ResidentZones};
use mongodns_server::rrl::{Rrl, RrlConfig};
use mongodns_server::zones::ZoneRegistry;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::task::JoinHandle;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

type LogHandle = reload::Handle<EnvFilter, Registry>;

fn main() {
    let cli = Cli::parse();
    let resolved = match cli.resolve() {
        Ok(r) => r,
        Err(message) => {
            eprintln!("mongodns-server: {message}");
            std::process::exit(2);
        }
    };
    if cli.args.check_config {
        // The TSIG keys (and key file) and the NSID are checked as at start.
        if let Err(message) = pipeline_config(&resolved.config) {
            eprintln!("mongodns-server: {message}");
            std::process::exit(2);
        }
        // A closed pipe (`| head`) is not an error worth a panic.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stdout(),
            "{}# configuration is valid",
            resolved.render()
        );
        return;
    }
    let log = init_logging(&resolved);
    let workers = resolved.config.worker_count();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("cannot start the tokio runtime");
    let result = runtime.block_on(run(cli, resolved, log, workers));
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Err(message) = result {
        eprintln!("mongodns-server: {message}");
        std::process::exit(2);
    }
}

fn init_logging(resolved: &Resolved) -> LogHandle {
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&resolved.config.log));
    let registry = tracing_subscriber::registry().with(filter);
    match resolved.config.log_format {
        LogFormat::Text => registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(false)
                    .with_writer(std::io::stderr),
            )
            .init(),
    }
    handle
}

/// Start-up in named steps, then serve until SIGTERM or SIGINT, then drain.
async fn run(cli: Cli, resolved: Resolved, log: LogHandle, workers: usize) -> Result<(), String> {
    let started = Instant::now();
    let args = resolved.config.clone();
    if let Some(file) = &resolved.file {
        tracing::info!(file = %file.display(), "configuration read");
    }
    let store = connect(&args).await?;
    let config = pipeline_config(&args)?;
    let caches = Caches::start(&args, &store);
    start_notify(&args, &config, &store, &caches.registry)?;
    mongodns_server::update::warm::warm_signers(&store, &config.tsig_keys);
    let serving = Serving {
        cli,
        resolved,
        log,
        workers,
        started,
        store,
        caches,
    };
    // The answer path's backend: resident zones in front of the record
    // cache only when residency is on, so that off it is exactly the
    // record cache (the smaller per-query futures keep the heap compact).
    match serving.caches.residency.clone() {
        Some(residency) => {
            let records = serving.caches.records.clone();
            let backend = Arc::new(ResidentZones::new(records, residency));
            serving.serve(backend, config).await
        }
        None => {
            let backend = serving.caches.records.clone();
            serving.serve(backend, config).await
        }
    }
}

/// What serving needs once the database and the caches are up.
struct Serving {
    cli: Cli,
    resolved: Resolved,
    log: LogHandle,
    workers: usize,
    started: Instant,
    store: Store,
    caches: Caches,
}

impl Serving {
    /// The responder over `backend`, the query log, the control endpoint
    /// and the API; serves until a signal, then drains.
    async fn serve<B: Backend>(
        self,
        backend: Arc<B>,
        config: PipelineConfig,
    ) -> Result<(), String> {
        let Serving {
            cli,
            mut resolved,
            log,
            workers,
            started,
            store,
            caches,
        } = self;
        let args = resolved.config.clone();
        let rrl = rate_limiter(&args);
        let responder = responder(&args, &caches, backend, config, &store);
        let query_log = open_query_log(&args)?;
        let metrics = Arc::new(QueryMetrics::default());
        let handler = Arc::new(Observed::new(responder, metrics.clone(), query_log.clone()));
        let live = Live {
            log,
            query_log: query_log.clone(),
            packets: caches.packets.clone(),
            records: caches.records.clone(),
            registry: caches.registry.clone(),
        };
        if let Some(addr) = args.control_listen {
            start_control(
                &args,
                addr,
                control(&args, caches, &metrics, &query_log, &store, started),
            )?;
        }
        if let Some(addr) = args.api_listen {
            let key = args.api_key.as_deref().unwrap_or_default().into();
            let state = ApiState::new(store.clone(), key);
            mongodns_server::api::start_api(addr, state)?;
        }
        // Install the handlers before serving, so no signal finds the default
        // action (which would kill the process).
        let mut signals = Signals::install()?;
        let listeners = serve_dns(&args, workers, handler, rrl).await?;
        let why = signals.wait(&cli, &mut resolved, &live).await;
        drain(&args, why, &listeners, &metrics).await;
        if let Some(ql) = &query_log {
            ql.close(Duration::from_secs(2));
        }
        tracing::info!("exiting");
        Ok(())
    }
}

/// What the control endpoint reports on.
fn control(
    args: &Config,
    caches: Caches,
    metrics: &Arc<QueryMetrics>,
    query_log: &Option<Arc<QueryLog>>,
    store: &Store,
    started: Instant,
) -> Control {
    Control {
        packets: caches.packets,
        records: caches.records,
        registry: caches.registry,
        counters: caches.counters,
        residency: caches.residency,
        queries: Some(metrics.clone()),
        query_log: query_log.clone(),
        store: Some(store.clone()),
        zone_series: args.metrics_zone_series,
        health_max_lag: Duration::from_millis((args.freshness_ms * 20).max(5000)),
        started,
    }
}

/// Connects to MongoDB with the configured read preference and makes sure
/// the indexes exist.
async fn connect(args: &Config) -> Result<Store, String> {
    let db_timeout = Duration::from_millis(args.db_timeout_ms);
    let read = ReadFrom {
        preference: canonical_read_preference(&args.read_preference).map(str::to_string),
        max_staleness: args.read_max_staleness_s.map(Duration::from_secs),
        // Notice a frozen database within about --db-check-timeout-ms and
        // find it again at once (docs/reliability.md, "Recovery after a
        // pause"); a check slower than that interrupts every read in flight,
        // so it is not --db-timeout-ms ("Recovery under load").
        heartbeat: Some(Duration::from_millis(500)),
        check_timeout: Some(Duration::from_millis(args.db_check_timeout_ms)),
        // A read the query cannot wait for is given up by the database too
        // (docs/reliability.md, "Hostile zone data" / deadlines).
        max_time: Some(Duration::from_millis(args.query_timeout_ms)),
    };
    let store = Store::connect_with(&args.mongodb_uri, &args.database, db_timeout, &read)
        .await
        .map_err(|e| format!("{e}\n  (set --mongodb-uri or MONGODB_URI; `scripts/dev-mongo start` runs a dev database)"))?;
    store
        .ensure_indexes()
        .await
        .map_err(|e| format!("cannot create indexes: {e}"))?;
    tracing::info!(database = %args.database, read_preference = %args.read_preference, "connected to MongoDB, indexes in place");
    Ok(store)
}

/// The answer pipeline's settings: UDP size, deadline, transfers, TSIG keys.
fn pipeline_config(args: &Config) -> Result<PipelineConfig, String> {
    let mut config = PipelineConfig {
        max_udp_size: args.max_udp_size,
        query_timeout: Duration::from_millis(args.query_timeout_ms),
        axfr_allow: args.axfr_networks(),
        tsig_min_mac: args.tsig_min_mac_bytes,
        max_transfers: args.axfr_max_concurrent,
        ..PipelineConfig::default()
    };
    if !(mongodns_server::tsig::MIN_MAC_LEN..=mongodns_server::tsig::MAC_LEN)
        .contains(&config.tsig_min_mac)
    {
        return Err("tsig_min_mac_bytes: between 16 and 32".into());
    }
    for key in &args.tsig_key {
        config
            .tsig_keys
            .push(key.parse().map_err(|e| format!("tsig_key: {e}"))?);
    }
    if let Some(path) = &args.tsig_keyfile {
        config
            .tsig_keys
            .extend(mongodns_server::tsig::read_key_file(std::path::Path::new(
                path,
            ))?);
    }
    for key in config.tsig_keys.iter().filter(|k| k.zones.is_empty()) {
        tracing::warn!(key = %key.name, "TSIG key valid for every zone; scope it with zones=");
    }
    config.nsid = args.nsid.as_deref().map(parse_nsid).transpose()?;
    Ok(config)
}

/// NOTIFY out: the default secondaries (`--notify`, keys among the TSIG
/// keys), told of every serial the registry's poll sees move.
fn start_notify(
    args: &Config,
    pipeline: &PipelineConfig,
    store: &Store,
    registry: &ZoneRegistry,
) -> Result<(), String> {
    let keys = pipeline.tsig_keys.clone();
    let defaults = args
        .notify
        .iter()
        .map(|t| notify::parse_target(t, &keys))
        .collect::<Result<Vec<_>, _>>()?;
    if !defaults.is_empty() {
        let list: Vec<String> = defaults.iter().map(|t| t.addr.to_string()).collect();
        tracing::info!(secondaries = ?list, "NOTIFY on: default secondaries");
    }
    let config = notify::NotifyConfig {
        defaults,
        keys,
        interval: Duration::from_millis(args.notify_interval_ms),
        retry: notify::Sending {
            attempts: args.notify_retries,
            first_wait: Duration::from_millis(args.notify_timeout_ms),
            source: args.notify_source,
        },
        ..notify::NotifyConfig::default()
    };
    notify::Notifier::new(config, store.clone()).watch(registry);
    Ok(())
}

/// Response rate limiting, if a rate is set.
fn rate_limiter(args: &Config) -> Option<Arc<Rrl>> {
    Rrl::new(RrlConfig {
        rate: args.rrl_rate,
        slip: args.rrl_slip,
        ipv4_prefix: args.rrl_ipv4_prefix,
        ipv6_prefix: args.rrl_ipv6_prefix,
        ..Default::default()
    })
    .map(Arc::new)
}

/// The caches and their counters, the zone registry's poller running.
struct Caches {
    counters: Arc<Counters>,
    registry: Arc<ZoneRegistry>,
    records: Arc<RecordCache<Store>>,
    packets: Arc<PacketCache>,
    /// Resident zones, if on.
    residency: Option<Arc<Residency>>,
}

impl Caches {
    /// Builds the zone registry, the record cache and the packet cache, and
    /// starts polling the database for zone changes (and, with
    /// `--resident-mb`, loading resident zones).
    fn start(args: &Config, store: &Store) -> Caches {
        let counters = Arc::new(Counters::default());
        let registry = Arc::new(
            ZoneRegistry::new(
                args.record_cache_entries.max(1024),
                Duration::from_secs(args.cache_negative_ttl),
            )
            .with_preload(args.zone_preload_max),
        );
        let record_config = RecordCacheConfig {
            max_entries: args.record_cache_entries,
            max_bytes: args.record_cache_mb << 20,
            max_ttl: Duration::from_secs(args.cache_max_ttl),
            negative_ttl: Duration::from_secs(args.cache_negative_ttl),
            enabled: !args.no_cache && args.record_cache_entries > 0,
            serve_stale: Duration::from_secs(args.serve_stale_secs),
            db_max_inflight: args.db_max_inflight.max(1),
            db_max_queued: args.db_max_queued,
        };
        let records = Arc::new(RecordCache::new(
            store.clone(),
            registry.clone(),
            record_config,
            counters.clone(),
        ));
        let resident = args.resident_config();
        let residency = resident.enabled().then(|| {
            let residency = Residency::new(resident);
            // A load yields while the answer path's reads queue for the
            // database (resident/pacing.rs).
            let gate = Arc::downgrade(&records);
            let busy: Busy = Arc::new(move || gate.upgrade().is_some_and(|r| r.db_queued() > 0));
            residency.start(&registry, store.clone(), LoadPacing::behind(busy));
            tracing::info!(budget_mb = args.resident_mb, zones = %args.resident_zones, "resident zones on");
            residency
        });
        tokio::spawn(registry.clone().poll_loop(
            store.clone(),
            Duration::from_millis(args.freshness_ms.max(10)),
            counters.clone(),
        ));
        if let Ok(Some(catalog)) = args.catalog() {
            let keeper = keep_catalog(store.clone(), registry.clone(), catalog, counters.clone());
            tokio::spawn(keeper);
        }
        let packets = Arc::new(
            PacketCache::new(
                args.packet_cache_entries.max(1),
                args.packet_cache_mb << 20,
                Duration::from_secs(args.cache_max_ttl),
                args.max_udp_size,
                registry.clone(),
            )
            .with_serve_stale(Duration::from_secs(args.serve_stale_secs)),
        );
        Caches {
            counters,
            registry,
            records,
            packets,
            residency,
        }
    }
}

/// The responder: the pipeline over `backend` (resident zones when on, the
/// record cache), behind the packet cache unless caching is off, with zone
/// transfers and counters.
fn responder<B: Backend>(
    args: &Config,
    caches: &Caches,
    backend: Arc<B>,
    config: PipelineConfig,
    store: &Store,
) -> Arc<Responder<B>> {
    let responder = if args.no_cache || args.packet_cache_entries == 0 {
        Responder::new(backend, config)
    } else {
        let cache = ReplyCache {
            packets: caches.packets.clone(),
            registry: caches.registry.clone(),
            empty_ttl: Duration::from_secs(args.cache_negative_ttl),
        };
        Responder::with_cache(backend, config, cache)
    };
    let residency = caches
        .residency
        .clone()
        .unwrap_or_else(|| Residency::new(ResidentConfig::off()));
    let transfers = ResidentZones::new(Arc::new(store.clone()), residency);
    let responder = responder.with_transfer_store(transfers);
    Arc::new(responder.count_into(caches.counters.clone()))
}

/// Opens the query log if one is configured (an error is a start-up error).
fn open_query_log(args: &Config) -> Result<Option<Arc<QueryLog>>, String> {
    let Some(dest) = &args.query_log else {
        return Ok(None);
    };
    let ql_config = QueryLogConfig {
        destination: Destination::parse(dest),
        sample: args.query_log_sample,
        buffer: args.query_log_buffer,
        max_bytes: args.query_log_max_mb << 20,
        keep: args.query_log_keep,
        syslog_format: args.query_log_syslog_format,
    };
    let ql = QueryLog::open(&ql_config).map_err(|e| format!("cannot open the {e}"))?;
    tracing::info!(destination = %dest, sample = args.query_log_sample, "query log on");
    Ok(Some(Arc::new(ql)))
}

/// Starts the control endpoint on `addr`; a port already taken is a
/// start-up error.
fn start_control(args: &Config, addr: SocketAddr, control: Control) -> Result<(), String> {
    // Bound here, before DNS is served: a taken port is a start-up error,
    // and a server that answers DNS answers here too.
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| format!("cannot bind control endpoint {addr}: {e}"))?;
    let limits = ControlLimits {
        token: args.control_token.clone(),
        max_connections: args.control_max_connections,
    };
    tokio::spawn(serve_control(listener, Arc::new(control), limits));
    Ok(())
}

/// The limits TCP clients are held to.
fn tcp_limits(args: &Config) -> tcp::TcpLimits {
    tcp::TcpLimits {
        max_connections: args.tcp_max_connections,
        idle_timeout: Duration::from_secs(args.tcp_idle_timeout),
        max_queries: args.tcp_max_queries,
        io_timeout: Duration::from_millis(args.tcp_io_timeout_ms),
        max_lifetime: Duration::from_secs(args.tcp_max_lifetime),
        permit_timeout: Duration::from_millis(args.tcp_permit_timeout_ms),
        max_per_prefix: args.tcp_max_per_prefix,
        max_pending_bytes: args.tcp_max_pending_kb << 10,
        ..tcp::TcpLimits::default()
    }
}

/// Binds UDP (one socket per worker per address) and TCP on every listen
/// address and starts their serve loops; returns the loops' tasks.
async fn serve_dns<H: Handler>(
    args: &Config,
    workers: usize,
    handler: Arc<H>,
    rrl: Option<Arc<Rrl>>,
) -> Result<Vec<JoinHandle<()>>, String> {
    let limits = tcp_limits(args);
    let mut listeners = Vec::new();
    let udp_misses = Arc::new(tokio::sync::Semaphore::new(args.udp_max_misses.max(1)));
    for addr in &args.listen {
        let sockets = udp::bind_udp(*addr, workers, args.udp_rcvbuf, args.udp_sndbuf)
            .map_err(|e| format!("cannot bind UDP {addr}: {e}"))?;
        spread::share(&sockets, args.udp_spread);
        for socket in sockets {
            let settings = udp::UdpSettings {
                rrl: rrl.clone(),
                batch: args.udp_batch,
                misses: udp_misses.clone(),
                coalesce: Duration::from_micros(args.udp_coalesce_us),
            };
            listeners.push(tokio::spawn(udp::serve_udp_with(
                socket,
                handler.clone(),
                settings,
            )));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot bind TCP {addr}: {e}"))?;
        listeners.push(tokio::spawn(tcp::serve_tcp(
            listener,
            handler.clone(),
            limits,
        )));
        tracing::info!(%addr, workers, "serving DNS on UDP and TCP");
    }
    Ok(listeners)
}

/// The signals the server handles.
struct Signals {
    hangups: Signal,
    terms: Signal,
    interrupts: Signal,
}

impl Signals {
    /// Installs the handlers for SIGHUP, SIGTERM and SIGINT.
    fn install() -> Result<Signals, String> {
        Ok(Signals {
            hangups: signal(SignalKind::hangup()).map_err(|e| format!("SIGHUP: {e}"))?,
            terms: signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?,
            interrupts: signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT: {e}"))?,
        })
    }

    /// Reloads on every SIGHUP until SIGTERM or SIGINT; returns which.
    async fn wait(&mut self, cli: &Cli, resolved: &mut Resolved, live: &Live) -> &'static str {
        loop {
            tokio::select! {
                _ = self.hangups.recv() => reload(cli, resolved, live),
                _ = self.terms.recv() => break "SIGTERM",
                _ = self.interrupts.recv() => break "SIGINT",
            }
        }
    }
}

/// Stops accepting, then waits (at most `shutdown_grace_ms`) for the
/// queries in flight.
async fn drain(args: &Config, why: &str, listeners: &[JoinHandle<()>], metrics: &QueryMetrics) {
    // Stop accepting: the receive loops and the TCP accept loops end; the
    // tasks answering queries already read keep running.
    for task in listeners {
        task.abort();
    }
    let grace = Duration::from_millis(args.shutdown_grace_ms);
    let inflight = metrics.inflight.load(Ordering::Relaxed);
    tracing::info!(
        signal = why,
        inflight,
        grace_ms = args.shutdown_grace_ms,
        "stopped accepting queries, draining"
    );
    let deadline = Instant::now() + grace;
    while metrics.inflight.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left = metrics.inflight.load(Ordering::Relaxed);
    if left > 0 {
        tracing::warn!(
            left,
            "queries still in flight after the grace period; exiting anyway"
        );
    }
    // Replies written by the tasks that just finished are in the sockets;
    // give the TCP writers a moment to hand them to the kernel.
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// What SIGHUP can change while serving.
struct Live {
    log: LogHandle,
    query_log: Option<Arc<QueryLog>>,
    packets: Arc<PacketCache>,
    records: Arc<RecordCache<Store>>,
    registry: Arc<ZoneRegistry>,
}

/// SIGHUP: re-read the configuration, apply what can change while serving,
/// reopen the query log.
fn reload(cli: &Cli, current: &mut Resolved, live: &Live) {
    match cli.resolve() {
        Err(e) => {
            tracing::error!(error = %e, "SIGHUP: configuration not reloaded, keeping the old one")
        }
        Ok(new) => {
            let cfg = &new.config;
            if cfg.log != current.config.log {
                match live.log.reload(EnvFilter::new(&cfg.log)) {
                    Ok(()) => tracing::info!(filter = %cfg.log, "SIGHUP: log filter changed"),
                    Err(e) => tracing::error!(error = %e, "SIGHUP: cannot change the log filter"),
                }
            }
            if let Some(ql) = &live.query_log {
                if ql.sample() != cfg.query_log_sample {
                    ql.set_sample(cfg.query_log_sample);
                    tracing::info!(
                        sample = cfg.query_log_sample,
                        "SIGHUP: query log sampling changed"
                    );
                }
            }
            if (cfg.cache_max_ttl, cfg.cache_negative_ttl)
                != (
                    current.config.cache_max_ttl,
                    current.config.cache_negative_ttl,
                )
            {
                let max = Duration::from_secs(cfg.cache_max_ttl);
                let negative = Duration::from_secs(cfg.cache_negative_ttl);
                live.packets.set_max_ttl(max);
                live.records.set_ttl_caps(max, negative);
                live.registry.set_negative_ttl(negative);
                tracing::info!(
                    cache_max_ttl = cfg.cache_max_ttl,
                    cache_negative_ttl = cfg.cache_negative_ttl,
                    "SIGHUP: cache TTL caps changed (for entries stored from now on)"
                );
            }
            let restart = current.needs_restart(cfg);
            if !restart.is_empty() {
                tracing::warn!(options = ?restart, "SIGHUP: these changes take effect only after a restart");
            }
            current.config.log = cfg.log.clone();
            current.config.query_log_sample = cfg.query_log_sample;
            current.config.cache_max_ttl = cfg.cache_max_ttl;
            current.config.cache_negative_ttl = cfg.cache_negative_ttl;
        }
    }
    if let Some(ql) = &live.query_log {
        ql.reopen();
    }
    tracing::info!("SIGHUP handled");
}
