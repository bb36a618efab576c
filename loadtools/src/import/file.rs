//! One zone file imported into one zone.
//!
//! ```text
//!  validate (pass 1, on a blocking thread) ─► begin (resume position from
//!  the zone document) ─► MergeSigning::begin (a secured zone's lease)
//!  reader thread: skip, group, batch ─► jobs ─► write_jobs: signed batch by
//!  batch, or up to in_flight bulk writes with checkpoints every 0.5 s
//!  ─► finish_import: signed, switched or published
//! ```

use super::finish::finish_import;
use super::jobs::{add_stats, input_key, Checkpoint, Job, JobRunner, Target};
use super::readers::{join_reader, spawn_node_reader};
use super::signed_merge::{signed_jobs, MergeSigning};
use super::validate::{validate, Checked};
use super::{
    write_mode, ImportError, ImportOptions, ImportSummary, ImportTuning, Progress, IMPORT_PHASE,
};
use backend_mongo::{Store, WriteMode, WriteStats, ZoneWriter};
use dns::presentation::ZoneFileReader;
use dns::Name;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Imports `path` into the zone: validates it all, then writes it.
pub async fn import_file(
    store: &Store,
    path: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportSummary, ImportError> {
    import_file_with(store, path, options, &ImportTuning::default(), progress).await
}

/// [`import_file`] with rate limiting, periodic publishing and resuming.
pub async fn import_file_with(
    store: &Store,
    path: &Path,
    options: &ImportOptions,
    tuning: &ImportTuning,
    progress: &dyn Progress,
) -> Result<ImportSummary, ImportError> {
    let started = Instant::now();
    let exists = store.find_zone(&options.zone).await?.is_some();
    let checked = validate_on_thread(path, &options.zone, options.replace || !exists).await?;
    let total = checked.records;
    progress.phase(IMPORT_PHASE, total);
    let key = tuning.resumable.then(|| input_key(path));
    let (writer, skip) = store
        .begin_resumable_write(&options.zone, write_mode(options), key.as_deref())
        .await?;
    let start_gen = writer.previous().map_or(0, |p| p.gen);
    let mut signing = MergeSigning::begin(store, &writer, start_gen).await?;
    let writer = Arc::new(writer);
    let (tx, rx) = mpsc::channel(options.in_flight.max(1) * 2);
    let reader = ZoneFileReader::open(path, options.zone.clone(), None)?;
    let batch_size = options.batch_size.max(1);
    let thread = spawn_node_reader(reader, options.zone.clone(), skip, batch_size, tx);
    let runner = JobRunner {
        target: Target::Zone(writer.clone()),
        in_flight: options.in_flight,
        tuning,
        checkpoint: match key {
            Some(_) => Checkpoint::Zone(writer.as_ref()),
            None => Checkpoint::None,
        },
        publisher: (writer.mode() == WriteMode::Merge).then_some(writer.as_ref()),
        progress,
    };
    let result = write_jobs(store, &writer, &mut signing, runner, rx, skip).await;
    let (stats, ()) = join_reader(thread, result)?;
    let writer = Arc::try_unwrap(writer)
        .map_err(|_| ImportError::Zone("a writer task is still running".into()))?;
    let zone = finish_import(store, writer, signing, options.grace, skip, start_gen).await?;
    Ok(ImportSummary {
        records: total,
        writes: stats,
        elapsed: started.elapsed(),
        zone,
        resumed_from: skip,
        signer_owned: checked.signer_owned,
    })
}

/// Pass 1 on a blocking thread (it reads the file without holding it).
async fn validate_on_thread(
    path: &Path,
    zone: &Name,
    must_have_soa: bool,
) -> Result<Checked, ImportError> {
    let path = path.to_path_buf();
    let zone = zone.clone();
    tokio::task::spawn_blocking(move || validate(&path, &zone, must_have_soa))
        .await
        .map_err(|e| ImportError::Zone(format!("validation thread failed: {e}")))?
}

/// Writes the jobs. A signed merge goes batch by batch, in input order
/// (each batch relinks the NSEC/NSEC3 chain around the names it adds),
/// until a signer waits for the lease; everything else, and the rest after
/// the hand-over, goes through `runner`.
async fn write_jobs(
    store: &Store,
    writer: &ZoneWriter,
    signing: &mut MergeSigning,
    runner: JobRunner<'_>,
    mut rx: mpsc::Receiver<Job>,
    skip: u64,
) -> Result<WriteStats, ImportError> {
    let Some(signer) = signing.signer.as_mut() else {
        return Ok(runner.run(rx, skip).await?.0);
    };
    let (mut stats, written, wanted) =
        signed_jobs(store, writer, signer, &mut rx, skip, runner.progress).await?;
    if wanted {
        signing.hand_over(writer).await?;
        let (rest, _) = runner.run(rx, written).await?;
        add_stats(&mut stats, &rest);
    }
    Ok(stats)
}
