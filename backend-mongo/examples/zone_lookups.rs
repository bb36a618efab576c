//! What the zone lookup of a deep name costs the database, two ways side
//! by side: one `find` of every candidate apex (`_id` `$in`, what
//! `Store::served_zones_in` sends, and
//! `Store::served_zones_among` beyond a few candidates) against one `find_zone` point read
//! per candidate, 32 in flight (what it sent before). On MongoDB the `$in`
//! is an `_id` index lookup per candidate; on FerretDB, whose `_id` index
//! serves only exact equality, it is a scan of `zones`, so its cost grows
//! with the number of zones: this measures by how much.
//!
//! ```text
//!  DATABASE with fewer than ZONES zones ─► z<i>.lookups.test. written
//!      (Store::write_zones, 500 a call: SOA and NS at the apex)
//!  latency: ROUNDS deep names (110 random labels, under a random zone or
//!      under no zone), both ways each, alternating which goes first;
//!      both must find the same zones ─► medians, 90th percentiles;
//!      then ROUNDS short names (one label: 4 or 5 candidates) alike
//!  throughput: CONCURRENCY tasks for SECONDS of deep names,
//!      $in / point / $in / point
//!      ─► lookups/s, and the database's CPU ms a lookup (DB_PID, if set)
//! ```
//!
//! `cargo run --release -p backend-mongo --example zone_lookups -- URI DATABASE ZONES [ROUNDS=200] [CONCURRENCY=16] [SECONDS=5]`

use backend_mongo::{Name, NodeWrite, RRset, RType, Store, WriteMode, ZoneContent, ZoneInfo};
use futures::future::try_join_all;
use mongodb::bson::{doc, Document};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Point reads in flight at once, as the server sent them before.
const POINT_READS_AT_ONCE: usize = 32;

mod common;

#[tokio::main]
async fn main() {
    common::finish("zone_lookups", run().await);
}

/// The command line, parsed.
struct Args {
    uri: String,
    database: String,
    zones: usize,
    rounds: usize,
    concurrency: usize,
    seconds: u64,
}

fn args() -> Result<Args, String> {
    let usage = "zone_lookups URI DATABASE ZONES [ROUNDS=200] [CONCURRENCY=16] [SECONDS=5]";
    let a = common::Words::read(usage, 3)?;
    Ok(Args {
        uri: a.word(0).into(),
        database: a.word(1).into(),
        zones: a.number(2, 2000)?,
        rounds: a.number(3, 200)?,
        concurrency: a.number(4, 16)?,
        seconds: a.number(5, 5)?,
    })
}

async fn run() -> Result<(), String> {
    let args = args()?;
    let store = Store::connect(&args.uri, &args.database, Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    store.ensure_indexes().await.map_err(|e| e.to_string())?;
    let have = fill(&store, args.zones).await?;
    println!("{} zone documents in {}", have, args.database);
    let apexes: Arc<Vec<Name>> = Arc::new((0..args.zones).map(apex).collect());
    latency(&store, &apexes, args.rounds, 110).await?;
    latency(&store, &apexes, args.rounds, 1).await?;
    for (way, point) in [
        ("$in", false),
        ("point", true),
        ("$in", false),
        ("point", true),
    ] {
        throughput(&store, &apexes, way, point, &args).await;
    }
    store.shutdown().await;
    Ok(())
}

/// The apex of zone `i`.
fn apex(i: usize) -> Name {
    format!("z{i}.lookups.test.").parse().unwrap()
}

/// Writes the zones `DATABASE` lacks, up to `zones`; returns how many
/// zone documents it holds.
async fn fill(store: &Store, zones: usize) -> Result<u64, String> {
    let collection = store.database().collection::<Document>("zones");
    let count = || async {
        collection
            .count_documents(doc! {})
            .await
            .map_err(|e| e.to_string())
    };
    let have = count().await? as usize;
    for from in (have..zones).step_by(500) {
        let batch: Vec<ZoneContent> = (from..zones.min(from + 500)).map(content).collect();
        store
            .write_zones(&batch, WriteMode::Replace, Duration::ZERO)
            .await
            .map_err(|e| e.to_string())?;
    }
    count().await
}

/// Zone `i`: an SOA and an NS at its apex.
fn content(i: usize) -> ZoneContent {
    let apex = apex(i);
    let mut soa = b"\x02ns\x07lookups\x04test\x00\x05admin\x07lookups\x04test\x00".to_vec();
    for v in [1u32, 3600, 600, 86400, 60] {
        soa.extend_from_slice(&v.to_be_bytes());
    }
    let ns = b"\x02ns\x07lookups\x04test\x00".to_vec();
    let set = |rtype, rdata: Vec<u8>| RRset {
        rtype,
        ttl: 300,
        rdata: vec![rdata.into_boxed_slice()],
    };
    ZoneContent {
        nodes: vec![NodeWrite {
            name: apex.clone(),
            rrsets: vec![set(RType::SOA, soa), set(RType::NS, ns)],
        }],
        apex,
        resume_key: None,
    }
}

/// A small generator (xorshift), seeded from the clock.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A name `labels` random labels deep (one character each, the top one
/// of eight) under a random zone, or under no zone every other time; its
/// candidate apexes, deepest first.
fn candidates(rng: &mut Rng, apexes: &[Name], labels: usize) -> Vec<Name> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut label = |len: usize| -> String {
        (0..len)
            .map(|_| ALPHABET[rng.below(36) as usize] as char)
            .collect()
    };
    let mut parts: Vec<String> = (1..labels).map(|_| label(1)).collect();
    parts.push(label(8));
    let suffix = match rng.below(2) {
        0 => "nowhere.invalid.".to_string(),
        _ => apexes[rng.below(apexes.len() as u64) as usize].to_string(),
    };
    let name: Name = format!("{}.{suffix}", parts.join(".")).parse().unwrap();
    name.ancestors().collect()
}

/// The served zones among `candidates`, one point read each.
async fn by_points(store: &Store, candidates: &[Name]) -> Result<Vec<ZoneInfo>, String> {
    let mut out = Vec::new();
    for chunk in candidates.chunks(POINT_READS_AT_ONCE) {
        let reads = chunk.iter().map(|a| store.find_zone(a));
        let found = try_join_all(reads).await.map_err(|e| e.to_string())?;
        out.extend(found.into_iter().flatten());
    }
    Ok(out)
}

/// One lookup, one way, timed.
async fn lookup(
    store: &Store,
    candidates: &[Name],
    point: bool,
) -> Result<(Duration, Vec<Name>), String> {
    let started = Instant::now();
    let found = match point {
        true => by_points(store, candidates).await?,
        false => store
            .served_zones_in(candidates)
            .await
            .map_err(|e| e.to_string())?,
    };
    let mut apexes: Vec<Name> = found.into_iter().map(|z| z.apex).collect();
    apexes.sort();
    Ok((started.elapsed(), apexes))
}

/// One name `labels` labels deep at a time, both ways each, alternating
/// the order.
async fn latency(
    store: &Store,
    apexes: &[Name],
    rounds: usize,
    labels: usize,
) -> Result<(), String> {
    let mut rng = Rng(seed());
    let (mut ins, mut points) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let candidates = candidates(&mut rng, apexes, labels);
        let first_point = round % 2 == 1;
        let (t1, z1) = lookup(store, &candidates, first_point).await?;
        let (t2, z2) = lookup(store, &candidates, !first_point).await?;
        if z1 != z2 {
            return Err(format!("the two ways disagree: {z1:?} and {z2:?}"));
        }
        let (t_in, t_point) = if first_point { (t2, t1) } else { (t1, t2) };
        ins.push(t_in);
        points.push(t_point);
    }
    let (in_median, point_median) = (percentile(&mut ins, 50), percentile(&mut points, 50));
    println!(
        "latency, {rounds} names {labels} labels deep one at a time: $in median {:.2} ms (90th {:.2}), point reads median {:.2} ms (90th {:.2}); $in/point {:.2}",
        ms(in_median),
        ms(percentile(&mut ins, 90)),
        ms(point_median),
        ms(percentile(&mut points, 90)),
        in_median.as_secs_f64() / point_median.as_secs_f64()
    );
    Ok(())
}

/// `concurrency` tasks looking up deep names one way for `seconds`.
async fn throughput(store: &Store, apexes: &Arc<Vec<Name>>, way: &str, point: bool, args: &Args) {
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let cpu_before = db_cpu_ms();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let tasks: Vec<_> = (0..args.concurrency.max(1))
        .map(|i| {
            let (store, apexes) = (store.clone(), apexes.clone());
            let (done, failed) = (done.clone(), failed.clone());
            tokio::spawn(async move {
                let mut rng = Rng(seed() ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                while Instant::now() < deadline {
                    let candidates = candidates(&mut rng, &apexes, 110);
                    match lookup(&store, &candidates, point).await {
                        Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let took = started.elapsed().as_secs_f64();
    let (ok, bad) = (done.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    let cpu = match (cpu_before, db_cpu_ms()) {
        (Some(a), Some(b)) => format!(
            ", database CPU {:.2} ms a lookup",
            (b - a) as f64 / ok.max(1) as f64
        ),
        _ => String::new(),
    };
    println!(
        "throughput, {way}: {:.0} lookups/s at concurrency {} ({ok} in {took:.1} s, {bad} failed{cpu})",
        ok as f64 / took,
        args.concurrency
    );
}

/// User and system CPU of the process `DB_PID` so far, in ms.
fn db_cpu_ms() -> Option<u64> {
    let pid = std::env::var("DB_PID").ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on Linux.
    Some(ticks * 10)
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    nanos | 1
}

fn percentile(times: &mut [Duration], p: usize) -> Duration {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
