//! `mongodns-server`: command line, start-up checks, and the serve loops.
//!
//! ```text
//!  flags/env ─► connect to MongoDB (clear error if unreachable or too old)
//!     ─► ensure indexes ─► bind UDP (one socket per worker) and TCP ─► serve
//! ```

use backend_mongo::Store;
use clap::Parser;
use mongodns_server::cache::{Counters, PacketCache, RecordCache, RecordCacheConfig, ZoneRegistry};
use mongodns_server::control::{serve_control, Control};
use mongodns_server::frontend::{tcp, udp};
use mongodns_server::pipeline::transfer::Cidr;
use mongodns_server::pipeline::{PipelineConfig, ReplyCache, Responder};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Authoritative DNS server serving zones stored in MongoDB.
#[derive(Parser, Debug)]
#[command(name = "mongodns-server", version)]
struct Args {
    /// Address to serve DNS on, UDP and TCP (repeat for several).
    #[arg(
        long,
        default_value = "127.0.0.1:5300",
        env = "MONGODNS_LISTEN",
        value_delimiter = ','
    )]
    listen: Vec<SocketAddr>,
    /// MongoDB connection string.
    #[arg(
        long,
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017/?directConnection=true"
    )]
    mongodb_uri: String,
    /// Database holding the zones.
    #[arg(long, env = "MONGODNS_DATABASE", default_value = "mongodns")]
    database: String,
    /// UDP sockets (and runtime threads); 0 means one per core.
    #[arg(long, env = "MONGODNS_WORKERS", default_value_t = 0)]
    workers: usize,
    /// Largest UDP reply, also advertised in OPT.
    #[arg(long, env = "MONGODNS_MAX_UDP_SIZE", default_value_t = 1232)]
    max_udp_size: u16,
    /// Milliseconds allowed for an uncached answer before SERVFAIL.
    #[arg(long, env = "MONGODNS_QUERY_TIMEOUT_MS", default_value_t = 2000)]
    query_timeout_ms: u64,
    /// Milliseconds to wait for the database at start and per operation.
    #[arg(long, env = "MONGODNS_DB_TIMEOUT_MS", default_value_t = 1500)]
    db_timeout_ms: u64,
    /// TCP connections served at once.
    #[arg(long, env = "MONGODNS_TCP_MAX_CONNECTIONS", default_value_t = 256)]
    tcp_max_connections: usize,
    /// Seconds before an idle TCP connection is closed.
    #[arg(long, env = "MONGODNS_TCP_IDLE_TIMEOUT", default_value_t = 10)]
    tcp_idle_timeout: u64,
    /// SO_RCVBUF for UDP sockets, in bytes (kernel default if unset).
    #[arg(long, env = "MONGODNS_UDP_RCVBUF")]
    udp_rcvbuf: Option<usize>,
    /// SO_SNDBUF for UDP sockets, in bytes (kernel default if unset).
    #[arg(long, env = "MONGODNS_UDP_SNDBUF")]
    udp_sndbuf: Option<usize>,
    /// Address block allowed to transfer zones (AXFR/IXFR over TCP), e.g.
    /// `192.0.2.0/24`; repeat for several. Default: loopback only.
    #[arg(
        long = "axfr-allow",
        env = "MONGODNS_AXFR_ALLOW",
        value_delimiter = ','
    )]
    axfr_allow: Vec<Cidr>,
    /// Replies kept in the packet cache (0 turns it off).
    #[arg(
        long,
        env = "MONGODNS_PACKET_CACHE_ENTRIES",
        default_value_t = 1_000_000
    )]
    packet_cache_entries: usize,
    /// Memory bound of the packet cache, in MiB.
    #[arg(long, env = "MONGODNS_PACKET_CACHE_MB", default_value_t = 512)]
    packet_cache_mb: usize,
    /// Nodes kept in the record cache (0 turns it off).
    #[arg(
        long,
        env = "MONGODNS_RECORD_CACHE_ENTRIES",
        default_value_t = 1_000_000
    )]
    record_cache_entries: usize,
    /// Memory bound of the record cache, in MiB.
    #[arg(long, env = "MONGODNS_RECORD_CACHE_MB", default_value_t = 512)]
    record_cache_mb: usize,
    /// Longest time anything is cached, in seconds (record TTLs cap it further).
    #[arg(long, env = "MONGODNS_CACHE_MAX_TTL", default_value_t = 300)]
    cache_max_ttl: u64,
    /// How long a missing name or a name in no zone is cached, in seconds.
    #[arg(long, env = "MONGODNS_CACHE_NEGATIVE_TTL", default_value_t = 60)]
    cache_negative_ttl: u64,
    /// Milliseconds between checks for changed zones (writes are seen
    /// within about this long).
    #[arg(long, env = "MONGODNS_FRESHNESS_MS", default_value_t = 250)]
    freshness_ms: u64,
    /// Turn every cache off (each query reads the database): for measuring.
    #[arg(long, env = "MONGODNS_NO_CACHE")]
    no_cache: bool,
    /// Address of the HTTP control endpoint (/stats, /metrics, POST /purge); off if unset.
    #[arg(long, env = "MONGODNS_CONTROL_LISTEN")]
    control_listen: Option<SocketAddr>,
    /// Serve-stale (RFC 8767): seconds after expiry during which a cached
    /// reply or record may still be served, with TTL 30, when the database
    /// fails or times out. 0 (default): off.
    #[arg(long, env = "MONGODNS_SERVE_STALE_SECS", default_value_t = 0)]
    serve_stale_secs: u64,
    /// Queries answered on one TCP connection before it is closed (0: no limit).
    #[arg(long, env = "MONGODNS_TCP_MAX_QUERIES", default_value_t = 0)]
    tcp_max_queries: usize,
    /// Response rate limit: UDP replies per second per source prefix
    /// (0: off). See docs/reliability.md.
    #[arg(long, env = "MONGODNS_RRL_RATE", default_value_t = 0)]
    rrl_rate: u32,
    /// Of the replies over the rate, send every n-th as a truncated (TC)
    /// reply and drop the rest; 0 drops them all.
    #[arg(long, env = "MONGODNS_RRL_SLIP", default_value_t = 2)]
    rrl_slip: u32,
    /// Prefix length grouping IPv4 sources for rate limiting.
    #[arg(long, env = "MONGODNS_RRL_IPV4_PREFIX", default_value_t = 24)]
    rrl_ipv4_prefix: u8,
    /// Prefix length grouping IPv6 sources for rate limiting.
    #[arg(long, env = "MONGODNS_RRL_IPV6_PREFIX", default_value_t = 56)]
    rrl_ipv6_prefix: u8,
    /// A TSIG key allowed to transfer zones from anywhere:
    /// `hmac-sha256:NAME:BASE64SECRET` (repeat for several). Prefer
    /// --tsig-keyfile: a command line is visible to other local users.
    #[arg(long = "tsig-key", env = "MONGODNS_TSIG_KEY")]
    tsig_key: Vec<mongodns_server::tsig::TsigKey>,
    /// File of TSIG keys, one `hmac-sha256:NAME:BASE64SECRET` a line.
    #[arg(long, env = "MONGODNS_TSIG_KEYFILE")]
    tsig_keyfile: Option<std::path::PathBuf>,
    /// Log filter (tracing syntax), e.g. `info` or `mongodns_server=debug`.
    #[arg(long, env = "MONGODNS_LOG", default_value = "info")]
    log: String,
}

fn main() {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&args.log))
        .with_writer(std::io::stderr)
        .init();
    let workers = if args.workers == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.workers
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("cannot start the tokio runtime");
    if let Err(message) = runtime.block_on(run(args, workers)) {
        eprintln!("mongodns-server: {message}");
        std::process::exit(2);
    }
}

async fn run(args: Args, workers: usize) -> Result<(), String> {
    let db_timeout = Duration::from_millis(args.db_timeout_ms);
    let store = Store::connect(&args.mongodb_uri, &args.database, db_timeout)
        .await
        .map_err(|e| format!("{e}\n  (set --mongodb-uri or MONGODB_URI; `scripts/dev-mongo start` runs a dev database)"))?;
    store
        .ensure_indexes()
        .await
        .map_err(|e| format!("cannot create indexes: {e}"))?;
    tracing::info!(database = %args.database, "connected to MongoDB, indexes in place");
    let mut config = PipelineConfig {
        max_udp_size: args.max_udp_size,
        query_timeout: Duration::from_millis(args.query_timeout_ms),
        ..PipelineConfig::default()
    };
    if !args.axfr_allow.is_empty() {
        config.axfr_allow = args.axfr_allow.clone();
    }
    config.tsig_keys = args.tsig_key.clone();
    if let Some(path) = &args.tsig_keyfile {
        config
            .tsig_keys
            .extend(mongodns_server::tsig::read_key_file(path)?);
    }
    let rrl = mongodns_server::rrl::Rrl::new(mongodns_server::rrl::RrlConfig {
        rate: args.rrl_rate,
        slip: args.rrl_slip,
        ipv4_prefix: args.rrl_ipv4_prefix,
        ipv6_prefix: args.rrl_ipv6_prefix,
        ..Default::default()
    })
    .map(Arc::new);
    let counters = Arc::new(Counters::default());
    let registry = Arc::new(ZoneRegistry::new(
        args.record_cache_entries.max(1024),
        Duration::from_secs(args.cache_negative_ttl),
    ));
    let record_config = RecordCacheConfig {
        max_entries: args.record_cache_entries,
        max_bytes: args.record_cache_mb << 20,
        max_ttl: Duration::from_secs(args.cache_max_ttl),
        negative_ttl: Duration::from_secs(args.cache_negative_ttl),
        enabled: !args.no_cache && args.record_cache_entries > 0,
        serve_stale: Duration::from_secs(args.serve_stale_secs),
    };
    let records = Arc::new(RecordCache::new(
        store.clone(),
        registry.clone(),
        record_config,
        counters.clone(),
    ));
    tokio::spawn(registry.clone().poll_loop(
        store.clone(),
        Duration::from_millis(args.freshness_ms.max(10)),
        counters.clone(),
    ));
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
    let responder = if args.no_cache || args.packet_cache_entries == 0 {
        Responder::new(records.clone(), config)
    } else {
        let cache = ReplyCache {
            packets: packets.clone(),
            registry: registry.clone(),
            empty_ttl: Duration::from_secs(args.cache_negative_ttl),
        };
        Responder::with_cache(records.clone(), config, cache)
    };
    let responder = Arc::new(responder.count_into(counters.clone()));
    if let Some(addr) = args.control_listen {
        let control = Arc::new(Control {
            packets,
            records,
            registry,
            counters,
        });
        let listener_task = tokio::spawn(async move {
            if let Err(e) = serve_control(addr, control).await {
                tracing::error!(%addr, error = %e, "control endpoint failed");
            }
        });
        drop(listener_task);
    }
    let limits = tcp::TcpLimits {
        max_connections: args.tcp_max_connections,
        idle_timeout: Duration::from_secs(args.tcp_idle_timeout),
        max_queries: args.tcp_max_queries,
        ..tcp::TcpLimits::default()
    };
    let mut tasks = Vec::new();
    for addr in &args.listen {
        let sockets = udp::bind_udp(*addr, workers, args.udp_rcvbuf, args.udp_sndbuf)
            .map_err(|e| format!("cannot bind UDP {addr}: {e}"))?;
        for socket in sockets {
            tasks.push(tokio::spawn(udp::serve_udp_limited(
                socket,
                responder.clone(),
                rrl.clone(),
            )));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot bind TCP {addr}: {e}"))?;
        tasks.push(tokio::spawn(tcp::serve_tcp(
            listener,
            responder.clone(),
            limits,
        )));
        tracing::info!(%addr, workers, "serving DNS on UDP and TCP");
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted, exiting"),
        _ = terminate() => tracing::info!("SIGTERM, exiting"),
    }
    Ok(())
}

async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}
