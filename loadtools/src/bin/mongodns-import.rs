//! `mongodns-import`: load zone files into MongoDB.
//!
//! ```text
//!  flags ─► connect ─┬─ --zone Z FILE      ─► import_file_with (one zone)
//!                    ├─ FILE ($ZONE lines)  ─► import_zones (many zones)
//!                    ├─ DIR                 ─► import_zones (a file per zone)
//!                    └─ --baseline          ─► baseline (raw inserts only)
//!                    ─► summary line: records, seconds, records/s
//! ```

use backend_mongo::{Name, Store};
use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadtools::import::{
    baseline, import_file_with, import_zones, BaselineInput, ImportOptions, ImportTuning, Progress,
    ZoneSource,
};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Import zone files into zones stored in MongoDB.
///
/// With --zone, FILE is one master file for that zone. Without it, FILE is
/// a multi-zone file (a `$ZONE <apex>` line before each zone) or a
/// directory holding one file per zone, named `<apex>` or `<apex>.zone`.
#[derive(Parser, Debug)]
#[command(name = "mongodns-import", version)]
struct Args {
    /// The zone's apex, e.g. example.com. (one-zone input).
    #[arg(long)]
    zone: Option<String>,
    /// The master file, multi-zone file or directory to read.
    file: PathBuf,
    /// Make each zone's content exactly the input's (switched atomically);
    /// without it, records are added to what a zone holds.
    #[arg(long)]
    replace: bool,
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
    /// Node documents per bulk write (default 1000, or rate/10 with --rate).
    #[arg(long)]
    batch_size: Option<usize>,
    /// Bulk writes in flight at once.
    #[arg(long, default_value_t = 4)]
    in_flight: usize,
    /// Milliseconds to keep the old version readable after --replace switches.
    #[arg(long, default_value_t = 3000)]
    grace_ms: u64,
    /// Write at most this many records per second, steadily.
    #[arg(long)]
    rate: Option<f64>,
    /// Merging into a served zone: make what was written visible every this
    /// many milliseconds (serial and generation bumped), not only at the end.
    #[arg(long, default_value_t = 1000)]
    publish_ms: u64,
    /// Do not keep or use a resume checkpoint.
    #[arg(long)]
    no_resume: bool,
    /// Measure the raw bulk-insert rate: insert the same documents with the
    /// same batch size into a scratch collection, and nothing else.
    #[arg(long)]
    baseline: bool,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&self, records: u64) {
        self.0.set_position(records);
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(message) = run(args).await {
        eprintln!("mongodns-import: {message}");
        std::process::exit(1);
    }
}

fn rate_line(what: &str, records: u64, secs: f64) -> String {
    format!(
        "{what}: {records} records, {secs:.2} s, {:.0} records/s",
        records as f64 / secs.max(1e-9)
    )
}

async fn run(args: Args) -> Result<(), String> {
    let zone: Option<Name> = args
        .zone
        .as_deref()
        .map(|z| z.parse().map_err(|e| format!("bad zone name {z:?}: {e}")))
        .transpose()?;
    let is_dir = args.file.is_dir();
    if !is_dir && !args.file.is_file() {
        return Err(format!("{}: no such file", args.file.display()));
    }
    if is_dir && zone.is_some() {
        return Err("--zone names the zone of one file; a directory holds many".into());
    }
    let store = Store::connect(&args.mongodb_uri, &args.database, Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    store.ensure_indexes().await.map_err(|e| e.to_string())?;
    let bar = ProgressBar::new(0);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {pos}/{len} records {per_sec} [{elapsed_precise}] {wide_bar}",
            )
            .expect("valid template"),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let default_batch = match args.rate {
        Some(r) => ((r / 10.0) as usize).clamp(1, 1000),
        None => 1000,
    };
    let options = ImportOptions {
        zone: zone.clone().unwrap_or_else(Name::root),
        replace: args.replace,
        batch_size: args.batch_size.unwrap_or(default_batch).max(1),
        in_flight: args.in_flight.max(1),
        grace: Duration::from_millis(args.grace_ms),
    };
    let tuning = ImportTuning {
        rate: args.rate.filter(|r| *r > 0.0),
        publish_every: (args.publish_ms > 0).then(|| Duration::from_millis(args.publish_ms)),
        resumable: !args.no_resume,
    };
    let source = if is_dir {
        ZoneSource::Directory(args.file.clone())
    } else {
        ZoneSource::MultiFile(args.file.clone())
    };
    let progress = Bar(bar.clone());
    if args.baseline {
        let input = match zone {
            Some(_) => BaselineInput::File(args.file.clone()),
            None => BaselineInput::Zones(source),
        };
        let s = baseline(&store, input, &options, &progress)
            .await
            .map_err(|e| e.to_string())?;
        bar.finish_and_clear();
        println!(
            "{} ({} documents, batch {}, {} in flight)",
            rate_line("baseline", s.records, s.elapsed.as_secs_f64()),
            s.documents,
            options.batch_size,
            options.in_flight
        );
        return Ok(());
    }
    if zone.is_some() {
        let summary = import_file_with(&store, &args.file, &options, &tuning, &progress)
            .await
            .map_err(|e| e.to_string())?;
        bar.finish_and_clear();
        let secs = summary.elapsed.as_secs_f64();
        println!(
            "imported {} records into {} (serial {}, version {}; {} stored by an earlier run): {} inserted, {} merged, {:.2} s, {:.0} records/s",
            summary.records,
            summary.zone.apex,
            summary.zone.serial,
            summary.zone.ver,
            summary.resumed_from,
            summary.writes.inserted,
            summary.writes.merged,
            secs,
            summary.records as f64 / secs.max(1e-9)
        );
    } else {
        let s = import_zones(&store, &source, &options, &tuning, &progress)
            .await
            .map_err(|e| e.to_string())?;
        bar.finish_and_clear();
        let secs = s.elapsed.as_secs_f64();
        println!(
            "imported {} records in {} zones ({} already stored by an earlier run): {} inserted, {} merged, {:.2} s, {:.0} records/s",
            s.records,
            s.zones,
            s.zones_resumed,
            s.writes.inserted,
            s.writes.merged,
            secs,
            s.records as f64 / secs.max(1e-9)
        );
    }
    Ok(())
}
