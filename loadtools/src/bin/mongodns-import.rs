//! `mongodns-import`: load zone files into MongoDB — the importer of
//! `loadtools` (`loadtools::import`) and the dns crate's parser (`dns::presentation`).
//!
//! ```text
//!  flags ─► connect ─┬─ --zone Z FILE      ─► import_file_with (one zone)
//!                    ├─ FILE ($ZONE lines)  ─► import_zones (many zones)
//!                    ├─ DIR                 ─► import_zones (a file per zone)
//!                    └─ --baseline          ─► baseline (raw inserts only)
//!                    ─► summary line: records, seconds, records/s
//! ```

use backend_mongo::{ProgressReporter, Store, WriteStats};

use clap::Parser;
use dns::Name;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadtools::import::{
    baseline, import_file_with, import_zones, BaselineInput, ImportOptions, ImportSummary,
    ImportTuning, MultiSummary, Progress, ZoneSource,
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
#[command(
    name = "mongodns-import",
    version,
    long_about = "Import an RFC 1035 master file into a zone stored in MongoDB.\n\n\
The whole file is validated first ($ORIGIN, $TTL, $INCLUDE, parentheses, escapes, \
RFC 3597 \\# rdata); an error names file:line and nothing is written. $INCLUDE reads \
only regular files inside the including file's directory, or in an --include-dir. Records are \
then written in unordered bulk batches. Without --replace they are added to the zone \
(re-running the same file changes nothing); with --replace the zone becomes exactly \
the file, switched atomically for readers. The SOA serial and the zone's generation \
move forward, so running servers serve the change within their freshness interval. \
Progress is shown on a terminal and written every second to the database's \
`progress` collection, where every server exposes it on /metrics.",
    after_help = "EXIT STATUS:\n    0  imported\n    1  bad file (file:line), bad zone name, database error\n\n\
ENVIRONMENT:\n    MONGODB_URI, MONGODNS_DATABASE   as for mongodns-server\n\n\
EXAMPLES:\n    mongodns-import --zone example.com. --replace examples/example.com.zone\n    \
MONGODB_URI=mongodb://db1,db2/?replicaSet=rs0 mongodns-import --zone big.test. big.zone\n\n\
SEE ALSO:\n    docs/schema.md (what is written), docs/zone-files.md (what is accepted)"
)]
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
    /// Also let `$INCLUDE` read files in DIR (and below); repeatable. By
    /// default a zone file may include only regular files inside its own
    /// directory.
    #[arg(long, value_name = "DIR")]
    include_dir: Vec<PathBuf>,
}

/// The terminal bar, and the `progress` document servers show on /metrics.
struct Bar<'a>(ProgressBar, &'a ProgressReporter);

impl Progress for Bar<'_> {
    fn phase(&self, _name: &str, total: u64) {
        self.0.set_length(total);
        self.1.set_total(total);
    }
    fn set(&self, records: u64) {
        self.0.set_position(records);
        self.1.set_done(records);
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
    if !args.include_dir.is_empty() {
        dns::presentation::allow_include_dirs(&args.include_dir)?;
    }
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
    let result = import(&args, zone, is_dir, &store).await;
    // Before the runtime ends, or the driver may panic at exit
    // (`Store::shutdown`).
    store.shutdown().await;
    result
}

/// The import itself, on a connected store.
async fn import(
    args: &Args,
    zone: Option<Name>,
    is_dir: bool,
    store: &Store,
) -> Result<(), String> {
    store.ensure_indexes().await.map_err(|e| e.to_string())?;
    let bar = progress_bar();
    let (options, tuning) = settings(args, zone.as_ref());
    let source = if is_dir {
        ZoneSource::Directory(args.file.clone())
    } else {
        ZoneSource::MultiFile(args.file.clone())
    };
    // Progress goes to the terminal and to the database, where the server's
    // /metrics shows it (docs/operations.md).
    let label = zone
        .as_ref()
        .map_or_else(|| args.file.display().to_string(), |z| z.to_string());
    let reporter = ProgressReporter::start(store.clone(), "import", &label, Duration::from_secs(1));
    let progress = Bar(bar.clone(), &reporter);
    if args.baseline {
        let input = match zone {
            Some(_) => BaselineInput::File(args.file.clone()),
            None => BaselineInput::Zones(source),
        };
        let s = baseline(store, input, &options, &progress)
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
    let line = if zone.is_some() {
        let result = import_file_with(store, &args.file, &options, &tuning, &progress).await;
        reporter.finish(result.is_ok()).await;
        one_zone_line(&result.map_err(|e| e.to_string())?)
    } else {
        let result = import_zones(store, &source, &options, &tuning, &progress).await;
        reporter.finish(result.is_ok()).await;
        many_zones_line(&result.map_err(|e| e.to_string())?)
    };
    bar.finish_and_clear();
    println!("{line}");
    Ok(())
}

/// A progress bar on a terminal, nothing otherwise.
fn progress_bar() -> ProgressBar {
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
    bar
}

/// The import's settings from the flags: batches of 1,000 nodes (a tenth
/// of a second's worth under --rate), resumable unless --no-resume.
fn settings(args: &Args, zone: Option<&Name>) -> (ImportOptions, ImportTuning) {
    let default_batch = match args.rate {
        Some(r) => ((r / 10.0) as usize).clamp(1, 1000),
        None => 1000,
    };
    let options = ImportOptions {
        zone: zone.cloned().unwrap_or_else(Name::root),
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
    (options, tuning)
}

/// The summary line of a one-zone import.
fn one_zone_line(summary: &ImportSummary) -> String {
    format!(
        "imported {} records into {} (serial {}, version {}; {} stored by an earlier run): {}",
        summary.records,
        summary.zone.apex,
        summary.zone.serial,
        summary.zone.ver,
        summary.resumed_from,
        pace(
            &summary.writes,
            summary.records,
            summary.elapsed,
            summary.signer_owned
        )
    )
}

/// The summary line of a multi-zone import.
fn many_zones_line(s: &MultiSummary) -> String {
    format!(
        "imported {} records in {} zones ({} already stored by an earlier run): {}",
        s.records,
        s.zones,
        s.zones_resumed,
        pace(&s.writes, s.records, s.elapsed, s.signer_owned)
    )
}

/// The end of a summary line: documents inserted and merged, time taken,
/// records a second, and the DNSSEC records left out.
fn pace(writes: &WriteStats, records: u64, elapsed: Duration, signer_owned: u64) -> String {
    let secs = elapsed.as_secs_f64();
    format!(
        "{} inserted, {} merged, {:.2} s, {:.0} records/s",
        writes.inserted,
        writes.merged,
        secs,
        records as f64 / secs.max(1e-9)
    ) + &left_out(signer_owned)
}

/// What the summary says of the DNSSEC records left out, if any.
fn left_out(signer_owned: u64) -> String {
    match signer_owned {
        0 => String::new(),
        n => format!(
            "; {n} DNSSEC records (RRSIG, NSEC, NSEC3, NSEC3PARAM, DNSKEY, CDS, CDNSKEY) left out: \
             mongodns-sign makes them (mongodns-sign secure-zone ZONE signs the zone)"
        ),
    }
}
