//! What `resign --follow` costs per change on a large secured zone: the
//! incremental pass (only the names a writer's change record lists) beside
//! the full pass (every node of the version), in one run.
//!
//! ```text
//!  follow (in process) ─► first pass: full        ─► row "full"
//!  loop ROUNDS: merge K new names, unsigned ─► wait for the pass ─► row
//!               delete those K names, unsigned ─► wait for the pass ─► row
//! ```
//!
//! A benchmark, not a test: it prints a table. The zone must be secured
//! already (see `bench/follow`). Changes it makes are undone by the
//! deletion rounds; the SOA serial moves forward.
//!
//! ```sh
//! cargo run --release -p signer --example follow_cost -- \
//!     --mongodb-uri "$MONGODB_URI" --database bench_follow --zone bench.test \
//!     --names 100 --rounds 3
//! ```

use backend_mongo::{Name, NodeWrite, RRset, RType, Store};
use clap::Parser;
use signer::{Progress, Report, Validity};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

#[derive(Parser)]
struct Args {
    #[arg(long, env = "MONGODB_URI")]
    mongodb_uri: String,
    #[arg(long)]
    database: String,
    #[arg(long)]
    zone: Name,
    /// Names added (then deleted) per round.
    #[arg(long, default_value_t = 100)]
    names: usize,
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// Sends every pass's report to the measuring loop.
struct Passes(mpsc::UnboundedSender<(Report, Duration)>);

impl Progress for Passes {
    fn phase(&self, _: &str, _: u64) {}
    fn set(&self, _: u64) {}
    fn resigned(&self, _: &Name, report: &Report, elapsed: Duration) {
        let _ = self.0.send((report.clone(), elapsed));
    }
}

/// Waits for the next pass that wrote something (5 minutes at most).
async fn next_write(rx: &mut mpsc::UnboundedReceiver<(Report, Duration)>) -> (Report, Duration) {
    loop {
        let got = tokio::time::timeout(Duration::from_secs(300), rx.recv())
            .await
            .expect("no re-signing pass within 5 minutes")
            .expect("follow stopped");
        if got.0.written > 0 {
            return got;
        }
    }
}

/// Waits for the pass that signs a change just made and prints its row.
async fn measure_pass(
    rx: &mut mpsc::UnboundedReceiver<(Report, Duration)>,
    what: &str,
    changed: usize,
) {
    let changed_at = Instant::now();
    let (r, pass) = next_write(rx).await;
    row(what, changed, &r, pass, changed_at.elapsed());
}

fn row(what: &str, changed: usize, r: &Report, pass: Duration, seen: Duration) {
    println!(
        "| {what} | {changed} | {} | {} | {} | {:.3} | {:.3} |",
        r.nodes,
        r.stats.signed,
        r.written,
        pass.as_secs_f64(),
        seen.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let store = Store::connect(&args.mongodb_uri, &args.database, Duration::from_secs(30))
        .await
        .expect("cannot connect");
    let (tx, mut rx) = mpsc::unbounded_channel();
    let follower = {
        let store = store.clone();
        let zone = args.zone.clone();
        tokio::spawn(async move {
            let validity = Validity::default();
            signer::follow(
                &store,
                &zone,
                &validity,
                0,
                Duration::from_millis(100),
                Duration::from_secs(3600),
                &Passes(tx),
            )
            .await
        })
    };
    println!("| pass | names changed | nodes read | signatures | documents written | pass s | change to published s |");
    println!("|---|---|---|---|---|---|---|");
    let started = Instant::now();
    let first = tokio::time::timeout(Duration::from_secs(1800), rx.recv())
        .await
        .expect("no first pass within 30 minutes")
        .expect("follow stopped");
    row("full (first pass)", 0, &first.0, first.1, started.elapsed());
    for round in 0..args.rounds {
        let names: Vec<Name> = (0..args.names)
            .map(|i| format!("fc{round}-{i}.{}", args.zone).parse().unwrap())
            .collect();
        let nodes: Vec<NodeWrite> = names
            .iter()
            .enumerate()
            .map(|(i, n)| NodeWrite {
                name: n.clone(),
                rrsets: vec![RRset {
                    rtype: RType::A,
                    ttl: 3600,
                    rdata: vec![Box::new([198, 51, 100, i as u8])],
                }],
            })
            .collect();
        backend_mongo::testing::merge_as_foreign_writer(&store, &args.zone, &nodes)
            .await
            .expect("merge");
        measure_pass(&mut rx, "incremental: add", names.len()).await;
        backend_mongo::testing::delete_nodes_as_foreign_writer(&store, &args.zone, &names)
            .await
            .expect("delete");
        measure_pass(&mut rx, "incremental: delete", names.len()).await;
    }
    follower.abort();
    store.shutdown().await;
}
