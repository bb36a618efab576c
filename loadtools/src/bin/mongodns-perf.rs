//! `mongodns-perf`: a dnsperf-style load generator, and the seed scenario —
//! the perf and scenario jobs of `loadtools` (`loadtools::perf`,
//! `loadtools::scenario`).
//!
//! ```text
//!  mongodns-perf -s ADDR -p PORT -d FILE [-l S] [-c N] [-q N] [-Q N] ...
//!      ─► Queries::load ─► perf::run (tokio, -T threads) ─► statistics block
//!                                                          ├─ --json (stdout)
//!                                                          └─ --plot FILE.svg
//!  mongodns-perf scenario seed-2011 [--scale 0.01] ─► loadtools::scenario
//! ```

use clap::{Parser, Subcommand};
use loadtools::perf::{self, PerfConfig, Queries, QueryOptions};
use loadtools::scenario::{self, ScenarioArgs};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Send DNS queries from a dnsperf query file and measure the replies.
#[derive(Parser, Debug)]
#[command(
    name = "mongodns-perf",
    version,
    args_conflicts_with_subcommands = true,
    after_help = "The query file has dnsperf's format: one `NAME TYPE` per line.\n\n\
EXAMPLES:\n    taskset -c 0 mongodns-perf -s 127.0.0.1 -p 5300 -d queries.txt -l 15 -c 4 -q 200\n    \
mongodns-perf scenario seed-2011 --scale 0.01\n\n\
SEE ALSO:\n    dnsperf(1), mongodns-zonegen, docs/benchmarks.md"
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Server address.
    #[arg(short = 's', default_value = "127.0.0.1")]
    server: String,
    /// Server port.
    #[arg(short = 'p', default_value_t = 53)]
    port: u16,
    /// Query file: `name TYPE` per line.
    #[arg(short = 'd')]
    datafile: Option<PathBuf>,
    /// Run for this many seconds, cycling through the file; without it,
    /// each query of the file is sent once.
    #[arg(short = 'l')]
    limit: Option<f64>,
    /// Clients: UDP sockets or TCP connections.
    #[arg(short = 'c', default_value_t = 1)]
    clients: usize,
    /// Queries outstanding at once, over all clients.
    #[arg(short = 'q', default_value_t = 100)]
    outstanding: usize,
    /// Send at most this many queries per second.
    #[arg(short = 'Q')]
    max_qps: Option<f64>,
    /// Seconds before a query without a reply counts as lost.
    #[arg(short = 't', default_value_t = 5.0)]
    timeout: f64,
    /// Set the DNSSEC OK bit (implies -e).
    #[arg(short = 'D')]
    dnssec_ok: bool,
    /// Add an EDNS0 OPT record to every query.
    #[arg(short = 'e')]
    edns: bool,
    /// EDNS UDP payload size advertised.
    #[arg(long, default_value_t = 4096)]
    edns_size: u16,
    /// Use TCP (pipelined on each connection).
    #[arg(long)]
    tcp: bool,
    /// Threads of the load generator.
    #[arg(short = 'T', default_value_t = 1)]
    threads: usize,
    /// Print the figures as JSON on stdout (the usual block goes to stderr).
    #[arg(long)]
    json: bool,
    /// Write a latency histogram and qps over time to this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay a published measurement on this machine.
    Scenario(ScenarioArgs),
}

fn main() {
    let args = Args::parse();
    let result = match args.command {
        Some(Command::Scenario(s)) => scenario::main(s),
        None => perf_main(args),
    };
    if let Err(e) = result {
        eprintln!("mongodns-perf: {e}");
        std::process::exit(1);
    }
}

fn perf_main(args: Args) -> Result<(), String> {
    let file = args
        .datafile
        .as_ref()
        .ok_or("a query file is needed (-d FILE)")?;
    let server: SocketAddr = match args.server.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, args.port),
        Err(_) => (args.server.as_str(), args.port)
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", args.server))?
            .next()
            .ok_or_else(|| format!("{}: no address", args.server))?,
    };
    let options = QueryOptions {
        edns: args.edns,
        dnssec_ok: args.dnssec_ok,
        edns_size: args.edns_size,
    };
    let queries = Arc::new(Queries::load(file, options)?);
    let config = PerfConfig {
        server,
        duration: args.limit.map(Duration::from_secs_f64),
        clients: args.clients,
        outstanding: args.outstanding,
        max_qps: args.max_qps.filter(|q| *q > 0.0),
        timeout: Duration::from_secs_f64(args.timeout.max(0.001)),
        tcp: args.tcp,
    };
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    }
    .map_err(|e| e.to_string())?;
    eprintln!(
        "[Status] Sending queries ({} in the file) to {server} over {}",
        queries.len(),
        if args.tcp { "TCP" } else { "UDP" }
    );
    let stats = runtime.block_on(perf::run(config, queries));
    eprintln!("[Status] Testing complete");
    if args.json {
        eprintln!("\n{}", stats.block());
        println!("{}", stats.json());
    } else {
        println!("\n{}", stats.block());
    }
    if let Some(path) = &args.plot {
        let title = format!("mongodns-perf {}", file.display());
        std::fs::write(path, perf::svg::render(&stats, &title))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
