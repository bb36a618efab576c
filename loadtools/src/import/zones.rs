//! Many zones imported at once, from one multi-zone file or a directory.
//!
//! ```text
//!  validate every section (pass 1; nothing written if one is invalid)
//!  ─► resume position (zones stored by a killed run) from the import metadata
//!  ─► spawn_zones_reader: whole zones, about batch_size nodes a job
//!  ─► JobRunner ─► Store::write_zones ─► checkpoint cleared at the end
//! ```

use super::jobs::{input_key, Checkpoint, JobRunner, Target};
use super::readers::{join_reader, spawn_zones_reader};
use super::sections::{sections, ZoneSource};
use super::validate::{validate_records, Checked};
use super::{write_mode, ImportError, ImportOptions, ImportTuning, Progress, IMPORT_PHASE};
use backend_mongo::{Store, WriteStats};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What a multi-zone import did.
#[derive(Clone, Debug)]
pub struct MultiSummary {
    /// Zones read.
    pub zones: u64,
    /// Records read.
    pub records: u64,
    /// Records of the types the signer maintains, left out.
    pub signer_owned: u64,
    /// Zones skipped because a killed run had stored them.
    pub zones_resumed: u64,
    /// Node documents inserted and merged.
    pub writes: WriteStats,
    /// Wall-clock time.
    pub elapsed: Duration,
}

/// Imports every zone of `source`: validates all of them first (nothing is
/// written if one is invalid), then writes them in batches of whole zones
/// (about `batch_size` nodes each) with [`Store::write_zones`].
pub async fn import_zones(
    store: &Store,
    source: &ZoneSource,
    options: &ImportOptions,
    tuning: &ImportTuning,
    progress: &dyn Progress,
) -> Result<MultiSummary, ImportError> {
    let started = Instant::now();
    let (zones, checked) = validate_sections_on_thread(source).await?;
    let total = checked.records;
    progress.phase(IMPORT_PHASE, total);
    let source_path = match source {
        ZoneSource::MultiFile(p) | ZoneSource::Directory(p) => p.clone(),
    };
    let key = tuning.resumable.then(|| input_key(&source_path));
    let skip = match &key {
        Some(k) => store.import_checkpoint(k).await?,
        None => 0,
    };
    let (tx, rx) = mpsc::channel(options.in_flight.max(1) * 2);
    let batch_size = options.batch_size.max(1);
    let thread = spawn_zones_reader(source.clone(), skip, key.clone(), batch_size, tx);
    let runner = JobRunner {
        target: Target::Zones {
            store: store.clone(),
            mode: write_mode(options),
            grace: options.grace,
        },
        in_flight: options.in_flight,
        tuning,
        checkpoint: match &key {
            Some(k) => Checkpoint::Meta(store, k),
            None => Checkpoint::None,
        },
        publisher: None,
        progress,
    };
    let result = runner.run(rx, 0).await;
    let ((stats, _), _skipped_records) = join_reader(thread, result)?;
    if let Some(k) = &key {
        store.set_import_checkpoint(k, None).await?;
    }
    Ok(MultiSummary {
        zones,
        records: total,
        signer_owned: checked.signer_owned,
        zones_resumed: skip,
        writes: stats,
        elapsed: started.elapsed(),
    })
}

/// Pass 1 of a multi-zone import, on a blocking thread: every section
/// checked. Returns the zones and what their records held.
async fn validate_sections_on_thread(source: &ZoneSource) -> Result<(u64, Checked), ImportError> {
    let source = source.clone();
    tokio::task::spawn_blocking(move || -> Result<(u64, Checked), ImportError> {
        let (mut zones, mut records) = (0, Checked::default());
        for section in sections(&source)? {
            let section = section?;
            let checked = validate_records(
                section.reader(),
                &section.file,
                &section.apex,
                true,
                section.line_offset,
            )?;
            records.records += checked.records;
            records.signer_owned += checked.signer_owned;
            zones += 1;
        }
        Ok((zones, records))
    })
    .await
    .map_err(|e| ImportError::Zone(format!("validation thread failed: {e}")))?
}
