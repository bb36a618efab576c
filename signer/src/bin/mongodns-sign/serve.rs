//! `serve`: the signing service's command line (the service itself is
//! `signer::service`).
//!
//! ```text
//!  --control-listen ─► /metrics, /health      serve() until killed
//! ```

use signer::service::{serve, serve_control, ServeOptions, Status};
use signer::SignError;
use std::time::Duration;

/// The arguments of `serve`.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Seconds between two looks at each zone.
    #[arg(long, default_value_t = 1.0, env = "MONGODNS_SIGN_INTERVAL")]
    interval: f64,
    /// Seconds between two looks for zones newly secured or given a policy.
    #[arg(long, default_value_t = 10.0, env = "MONGODNS_SIGN_DISCOVER_EVERY")]
    discover_every: f64,
    /// Seconds after which another `serve` process takes over the zones of
    /// one that died (the time-to-live of its leases, renewed every third
    /// of it). Keep it well below the policies' --rrsig-refresh.
    #[arg(long, default_value_t = 30, env = "MONGODNS_SIGN_LEASE")]
    lease: u64,
    /// Nodes with signatures due re-signed per pass under the signing
    /// lease (writers get in between passes).
    #[arg(long, default_value_t = 2000, env = "MONGODNS_SIGN_REFRESH_BATCH")]
    refresh_batch: i64,
    /// Passes one look-up of what is due feeds: on a database without the
    /// expiry index (FerretDB) each look-up is a scan of the collection.
    #[arg(long, default_value_t = 16, env = "MONGODNS_SIGN_REFRESH_PASSES")]
    refresh_passes: i64,
    /// Address of the control endpoint (/metrics, /health), e.g. 127.0.0.1:8054.
    #[arg(long, env = "MONGODNS_SIGN_CONTROL_LISTEN")]
    control_listen: Option<String>,
}

/// Runs the signing service until the process is stopped.
pub(crate) async fn run(
    store: &backend_mongo::Store,
    threads: usize,
    a: ServeArgs,
) -> Result<(), SignError> {
    let status = Status::default();
    if let Some(addr) = &a.control_listen {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| SignError::Usage(format!("--control-listen {addr}: {e}")))?;
        eprintln!(
            "control endpoint on http://{}",
            listener
                .local_addr()
                .map_or(addr.clone(), |a| a.to_string())
        );
        tokio::spawn(serve_control(listener, status.clone()));
    }
    let options = ServeOptions {
        interval: Duration::from_secs_f64(a.interval.max(0.05)),
        discover_every: Duration::from_secs_f64(a.discover_every.max(0.1)),
        lease: Duration::from_secs(a.lease.max(3)),
        refresh_batch: a.refresh_batch.max(1),
        refresh_passes: a.refresh_passes.max(1),
        threads,
    };
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let signals = stop_signals()?;
    tokio::spawn(async move {
        signals.await;
        eprintln!("stopping: each zone's look ends and its lease is given up");
        let _ = stopping.send(true);
    });
    eprintln!("signing service started");
    serve(store, options, status, stop).await
}

/// Resolves at the first SIGTERM or SIGINT.
fn stop_signals() -> Result<impl std::future::Future<Output = ()>, SignError> {
    use tokio::signal::unix::{signal, SignalKind};
    let to_io = |e: std::io::Error| SignError::Usage(format!("cannot watch signals: {e}"));
    let mut term = signal(SignalKind::terminate()).map_err(to_io)?;
    let mut int = signal(SignalKind::interrupt()).map_err(to_io)?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
