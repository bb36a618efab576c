//! The database's own pace for the writes of one signed DNS UPDATE message,
//! with nothing else running: the floor under what `mongodns-server` can
//! apply, measured by a bare client on the same documents.
//!
//! ```text
//!  DATABASE, collection nodes: a version of BASE names (A record, RRSIG,
//!      NSEC), written in unordered inserts of 1,000
//!  then, ROUNDS times, PER new names a round, each way in turn:
//!    read     PER point reads by _id, 32 in flight (the names looked up)
//!    two-step insert the new nodes unsigned (1,000 a command), then per
//!             new name its A signature, its NSEC and the predecessor's
//!             NSEC set by update statements, 16 a command, one command at
//!             a time (writer::MAX_UPDATES_PER_COMMAND): today's shape
//!    one-step insert the new nodes whole (records, signatures, NSEC), then
//!             the predecessors' NSEC by updates as above
//!    in-flight the two-step updates with 3 commands of 16 in flight
//!  ─► per way: median seconds per message and records/s
//! ```
//!
//! `cargo run --release -p backend-mongo --example update_writes -- URI DATABASE [BASE=100000] [PER=2000] [ROUNDS=3]`

use backend_mongo::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use futures::stream::{self, StreamExt, TryStreamExt};
use std::time::{Duration, Instant};

const ZONE: &str = "writes.test.";
const VER: i64 = 1;
const NODES: &str = "nodes";
const INSERT_BATCH: usize = 1000;
const PER_COMMAND: usize = 16;

mod common;

#[tokio::main]
async fn main() {
    common::finish("update_writes", run().await);
}

/// The command line, parsed.
struct Args {
    uri: String,
    database: String,
    base: usize,
    per: usize,
    rounds: usize,
}

fn args() -> Result<Args, String> {
    let usage = "update_writes URI DATABASE [BASE=100000] [PER=2000] [ROUNDS=3]";
    let a = common::Words::read(usage, 2)?;
    Ok(Args {
        uri: a.word(0).into(),
        database: a.word(1).into(),
        base: a.number(2, 100_000)?,
        per: a.number(3, 2000)?,
        rounds: a.number(4, 3)?,
    })
}

type Failure = Box<dyn std::error::Error>;

async fn run() -> Result<(), Failure> {
    let a = args()?;
    let client = mongodb::Client::with_uri_str(&a.uri).await?;
    let db = client.database(&a.database);
    db.drop().await?;
    let started = Instant::now();
    let base: Vec<String> = (0..a.base).map(|i| format!("b{i:07}")).collect();
    insert(&db, base.iter().map(|n| whole_node(n)).collect()).await?;
    eprintln!(
        "update_writes: {} base names written in {:.1} s",
        a.base,
        started.elapsed().as_secs_f64()
    );
    let mut times: [Vec<Duration>; 4] = Default::default();
    for round in 0..a.rounds {
        for (way, slot) in times.iter_mut().enumerate() {
            let fresh: Vec<String> = (0..a.per)
                .map(|i| format!("n{round}w{way}i{i:05}"))
                .collect();
            let t = Instant::now();
            match way {
                0 => point_reads(&db, &fresh).await?,
                1 => two_step(&db, &fresh, 1).await?,
                2 => one_step(&db, &fresh).await?,
                _ => two_step(&db, &fresh, 3).await?,
            }
            slot.push(t.elapsed());
        }
    }
    for (label, mut t) in ["read", "two-step", "one-step", "in-flight"]
        .into_iter()
        .zip(times)
    {
        t.sort();
        let median = t[t.len() / 2].as_secs_f64();
        println!(
            "{label:9}: median {median:.2} s a message of {} (runs {:?}), {:.0} records/s",
            a.per,
            t.iter()
                .map(|d| format!("{:.2}", d.as_secs_f64()))
                .collect::<Vec<_>>(),
            a.per as f64 / median
        );
    }
    db.drop().await?;
    Ok(())
}

fn id(name: &str) -> String {
    format!("{ZONE} {VER} {name}.{ZONE}")
}

fn bytes(n: usize, seed: u8) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![seed; n],
    })
}

/// A node as the signer leaves it: an A record, its RRSIG (ECDSA P-256,
/// about 95 octets), an NSEC and its RRSIG.
fn whole_node(name: &str) -> Document {
    let mut d = unsigned_node(name);
    let sets = d.get_document_mut("rrsets").expect("built above");
    sets.insert(
        "A",
        doc! {"ttl": 3600_i64, "rd": [bytes(4, 1)], "sigs": [bytes(95, 2)], "sd": 1_i64},
    );
    sets.insert(
        "NSEC",
        doc! {"ttl": 3600_i64, "rd": [bytes(40, 3)], "sigs": [bytes(95, 4)], "sd": 2_i64},
    );
    d.insert("sx", 1_900_000_000_i64);
    d
}

/// A node as an unsigned write leaves it: the A record alone.
fn unsigned_node(name: &str) -> Document {
    doc! {
        "_id": id(name),
        "zone": ZONE,
        "ver": VER,
        "name": format!("{name}.{ZONE}"),
        "ck": name,
        "rrsets": {"A": {"ttl": 3600_i64, "rd": [bytes(4, 1)]}},
    }
}

async fn insert(db: &mongodb::Database, docs: Vec<Document>) -> Result<(), Failure> {
    for part in docs.chunks(INSERT_BATCH) {
        db.run_command(doc! {"insert": NODES, "documents": part.to_vec(), "ordered": false})
            .await?;
    }
    Ok(())
}

/// Update statements in commands of [`PER_COMMAND`], `in_flight` commands
/// at a time.
async fn updates(
    db: &mongodb::Database,
    all: Vec<Document>,
    in_flight: usize,
) -> Result<(), Failure> {
    let commands: Vec<Document> = all
        .chunks(PER_COMMAND)
        .map(|part| doc! {"update": NODES, "updates": part.to_vec(), "ordered": false})
        .collect();
    stream::iter(commands)
        .map(|c| async move { db.run_command(c).await })
        .buffer_unordered(in_flight)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

async fn point_reads(db: &mongodb::Database, names: &[String]) -> Result<(), Failure> {
    let nodes = db.collection::<Document>(NODES);
    stream::iter(names.iter().map(|n| id(n)))
        .map(|i| {
            let nodes = nodes.clone();
            async move { nodes.find_one(doc! {"_id": i}).await }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// The predecessor's NSEC, pointed at a new name: one statement per name.
fn predecessor_updates(names: &[String]) -> Vec<Document> {
    names
        .iter()
        .enumerate()
        .map(|(i, _)| {
            doc! {"q": {"_id": id(&format!("b{:07}", i * 37 % 100_000))},
            "u": {"$set": {"rrsets.NSEC.rd": [bytes(40, 5)], "rrsets.NSEC.sigs": [bytes(95, 6)]}}}
        })
        .collect()
}

async fn two_step(
    db: &mongodb::Database,
    names: &[String],
    in_flight: usize,
) -> Result<(), Failure> {
    insert(db, names.iter().map(|n| unsigned_node(n)).collect()).await?;
    let mut all = Vec::with_capacity(names.len() * 3);
    for n in names {
        all.push(doc! {"q": {"_id": id(n)}, "u": {"$set": {"rrsets.A.sigs": [bytes(95, 2)], "rrsets.A.sd": 1_i64}, "$min": {"sx": 1_900_000_000_i64}}});
        all.push(doc! {"q": {"_id": id(n)}, "u": {"$set": {"rrsets.NSEC": {"ttl": 3600_i64, "rd": [bytes(40, 3)], "sigs": [bytes(95, 4)], "sd": 2_i64}}}});
    }
    all.extend(predecessor_updates(names));
    updates(db, all, in_flight).await
}

async fn one_step(db: &mongodb::Database, names: &[String]) -> Result<(), Failure> {
    insert(db, names.iter().map(|n| whole_node(n)).collect()).await?;
    updates(db, predecessor_updates(names), 1).await
}
