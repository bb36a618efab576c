//! The dev database's raw node lookup rate, from a small Rust client: the
//! same `Store::get_node` read (`find({_id})`) the server makes on a cache
//! miss, at a fixed concurrency, with nothing else around it. `bench/peers`
//! runs it beside the caches-off measurement to show whether the database
//! is the bottleneck.
//!
//! ```text
//!  names file (dnsperf format) ─► first word of each line ─► N tasks, each:
//!     loop until the deadline: get_node(zone, next name) ─► count, latency
//! ```
//!
//! `cargo run --release -p backend-mongo --example id_lookups -- URI DATABASE ZONE NAMES_FILE [CONCURRENCY] [SECONDS]`

use backend_mongo::{Name, Store};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

#[tokio::main]
async fn main() {
    common::finish("id_lookups", run().await);
}

async fn run() -> Result<(), String> {
    let usage = "id_lookups URI DATABASE ZONE NAMES_FILE [CONCURRENCY=64] [SECONDS=5]";
    let args = common::Words::read(usage, 4)?;
    let (concurrency, seconds) = (args.number(4, 64usize)?, args.number(5, 5u64)?);
    let (uri, database, zone, names_file) =
        (args.word(0), args.word(1), args.word(2), args.word(3));
    let zone: Name = zone.parse().map_err(|e| format!("zone {zone}: {e}"))?;
    let text = std::fs::read_to_string(names_file).map_err(|e| format!("{names_file}: {e}"))?;
    let names: Vec<Name> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .filter(|n: &Name| n.is_subdomain_of(&zone))
        .collect();
    if names.is_empty() {
        return Err(format!("no names of {zone} in {names_file}"));
    }
    let store = Store::connect(uri, database, Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    let info = store
        .find_zone(&zone)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("zone {zone} is not served in database {database}"))?;
    let names = Arc::new(names);
    let next = Arc::new(AtomicUsize::new(0));
    let (done, failed, latency_us) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (store, info, names, next) =
                (store.clone(), info.clone(), names.clone(), next.clone());
            let (done, failed, latency_us) = (done.clone(), failed.clone(), latency_us.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let name = &names[next.fetch_add(1, Ordering::Relaxed) % names.len()];
                    let t = Instant::now();
                    match store.get_node(&info, name).await {
                        Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    latency_us.fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.await.map_err(|e| e.to_string())?;
    }
    let took = started.elapsed().as_secs_f64();
    let (ok, bad) = (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    let mean_ms = latency_us.load(Ordering::Relaxed) as f64 / (ok + bad).max(1) as f64 / 1000.0;
    println!(
        "raw get_node lookups: {:.0}/s at concurrency {concurrency} ({ok} in {took:.1} s, {bad} failed, mean {mean_ms:.2} ms)",
        ok as f64 / took
    );
    Ok(())
}
