//! `mongodns-import`: load a master file into a zone stored in MongoDB.
//!
//! ```text
//!  flags ─► connect ─► import_file (validate all, then write in bulk) ─► summary
//! ```

use backend_mongo::{Name, ProgressReporter, Store};
use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use loadtools::import::{import_file, ImportOptions, Progress};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// Import an RFC 1035 master file into a zone stored in MongoDB.
#[derive(Parser, Debug)]
#[command(
    name = "mongodns-import",
    version,
    long_about = "Import an RFC 1035 master file into a zone stored in MongoDB.\n\n\
The whole file is validated first ($ORIGIN, $TTL, $INCLUDE, parentheses, escapes, \
RFC 3597 \\# rdata); an error names file:line and nothing is written. Records are \
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
    /// The zone's apex, e.g. example.com.
    #[arg(long)]
    zone: String,
    /// The master file to read.
    file: PathBuf,
    /// Make the zone's content exactly the file's (switched atomically);
    /// without it, records are added to what the zone holds.
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
    /// Node documents per bulk write.
    #[arg(long, default_value_t = 1000)]
    batch_size: usize,
    /// Bulk writes in flight at once.
    #[arg(long, default_value_t = 4)]
    in_flight: usize,
    /// Milliseconds to keep the old version readable after --replace switches.
    #[arg(long, default_value_t = 3000)]
    grace_ms: u64,
}

/// The terminal bar, and the `progress` document servers show on /metrics.
struct Bar<'a>(ProgressBar, &'a ProgressReporter);

impl Progress for Bar<'_> {
    fn start(&self, total: u64) {
        self.0.set_length(total);
        self.1.set_total(total);
    }
    fn advance(&self, records: u64) {
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

async fn run(args: Args) -> Result<(), String> {
    let zone: Name = args
        .zone
        .parse()
        .map_err(|e| format!("bad zone name {:?}: {e}", args.zone))?;
    if !args.file.is_file() {
        return Err(format!("{}: no such file", args.file.display()));
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
    let options = ImportOptions {
        zone,
        replace: args.replace,
        batch_size: args.batch_size.max(1),
        in_flight: args.in_flight.max(1),
        grace: Duration::from_millis(args.grace_ms),
    };
    let reporter = ProgressReporter::start(
        store.clone(),
        "import",
        &options.zone.to_string(),
        Duration::from_secs(1),
    );
    let result = import_file(&store, &args.file, &options, &Bar(bar.clone(), &reporter)).await;
    reporter.finish(result.is_ok()).await;
    let summary = result.map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let secs = summary.elapsed.as_secs_f64();
    println!(
        "imported {} records into {} (serial {}, version {}): {} inserted, {} merged, {:.2} s, {:.0} records/s",
        summary.records,
        summary.zone.apex,
        summary.zone.serial,
        summary.zone.ver,
        summary.writes.inserted,
        summary.writes.merged,
        secs,
        summary.records as f64 / secs.max(1e-9)
    );
    Ok(())
}
