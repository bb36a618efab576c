//! `mongodns-import --baseline`: the database's own insert rate for the
//! same documents, to compare an import with.
//!
//! ```text
//!  zone file or sections ─► reader thread: nodes in batches ─► JobRunner
//!  ─► BaselineWriter::insert (a scratch collection with the nodes' indexes)
//!  ─► collection dropped
//! ```

use super::jobs::{Checkpoint, JobRunner, Target};
use super::readers::{join_reader, spawn_node_reader, spawn_sections_node_reader};
use super::sections::ZoneSource;
use super::{ImportError, ImportOptions, ImportTuning, Progress};
use backend_mongo::{BaselineWriter, Store};
use dns::presentation::ZoneFileReader;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What `--baseline` measured.
#[derive(Clone, Debug)]
pub struct BaselineSummary {
    /// Records read.
    pub records: u64,
    /// Node documents inserted.
    pub documents: u64,
    /// Wall-clock time of the inserts.
    pub elapsed: Duration,
}

/// The input of a baseline run.
pub enum BaselineInput {
    /// One zone file.
    File(PathBuf),
    /// Many zones.
    Zones(ZoneSource),
}

/// `mongodns-import --baseline`: the same node documents as an import of
/// `path` (or of `source`), in batches of the same size with the same
/// number in flight, inserted into a scratch collection that has the same
/// indexes as `nodes`; no validation pass, no zone documents, no merging.
/// The collection is dropped at the end.
pub async fn baseline(
    store: &Store,
    input: BaselineInput,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<BaselineSummary, ImportError> {
    let writer = Arc::new(BaselineWriter::new(store, &options.zone).await?);
    let (tx, rx) = mpsc::channel(options.in_flight.max(1) * 2);
    let batch_size = options.batch_size.max(1);
    let zone = options.zone.clone();
    let thread = match input {
        BaselineInput::File(path) => {
            let reader = ZoneFileReader::open(&path, zone.clone(), None)?;
            spawn_node_reader(reader, zone, 0, batch_size, tx)
        }
        BaselineInput::Zones(source) => spawn_sections_node_reader(source, batch_size, tx),
    };
    let started = Instant::now();
    let tuning = ImportTuning::default();
    let runner = JobRunner {
        target: Target::Baseline(writer.clone()),
        in_flight: options.in_flight,
        tuning: &tuning,
        checkpoint: Checkpoint::None,
        publisher: None,
        progress,
    };
    let result = runner.run(rx, 0).await;
    let elapsed = started.elapsed();
    let ((stats, records), ()) = join_reader(thread, result)?;
    if let Ok(w) = Arc::try_unwrap(writer) {
        w.drop_collection().await?;
    }
    Ok(BaselineSummary {
        records,
        documents: stats.inserted,
        elapsed,
    })
}
