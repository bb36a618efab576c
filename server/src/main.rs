//! `mongodns-server`: command line, start-up checks, and the serve loops.
//!
//! ```text
//!  flags/env ─► connect to MongoDB (clear error if unreachable or too old)
//!     ─► ensure indexes ─► bind UDP (one socket per worker) and TCP ─► serve
//! ```

use backend_mongo::Store;
use clap::Parser;
use mongodns_server::frontend::{tcp, udp};
use mongodns_server::pipeline::transfer::Cidr;
use mongodns_server::pipeline::{PipelineConfig, Responder};
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
    let responder = Arc::new(Responder::new(Arc::new(store), config));
    let limits = tcp::TcpLimits {
        max_connections: args.tcp_max_connections,
        idle_timeout: Duration::from_secs(args.tcp_idle_timeout),
        ..tcp::TcpLimits::default()
    };
    let mut tasks = Vec::new();
    for addr in &args.listen {
        let sockets = udp::bind_udp(*addr, workers, args.udp_rcvbuf, args.udp_sndbuf)
            .map_err(|e| format!("cannot bind UDP {addr}: {e}"))?;
        for socket in sockets {
            tasks.push(tokio::spawn(udp::serve_udp(socket, responder.clone())));
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
