//! Importing master files into zones (`mongodns-import`).
//!
//! ```text
//!  one zone (file.rs):
//!   pass 1  validate: ZoneFileReader ─► every record checked (in zone, SOA at
//!           the apex only, CNAME alone at its name) ─ any error ─► stop, nothing written
//!   pass 2  reader thread: ZoneFileReader ─► NodeBuilder (group by owner, empty
//!           non-terminals) ─► batches ─► JobRunner: up to `in_flight` bulk writes
//!           (a secured zone's merge: signed batch by batch, signed_merge.rs)
//!   finish  signed, then ZoneWriter::finish or the switch (finish.rs)
//!  many zones (zones.rs): sections.rs cuts the input per zone ─► the same passes,
//!           whole zones a job
//!  --baseline (baseline.rs): the same documents into a scratch collection
//! ```

mod baseline;
mod file;
mod finish;
mod jobs;
mod nodes;
mod readers;
mod sections;
mod signed_merge;
mod validate;
mod zones;

pub use baseline::{baseline, BaselineInput, BaselineSummary};
pub use file::{import_file, import_file_with};
pub use jobs::input_key;
pub use sections::{ZoneSource, MAX_SECTION_BYTES};
pub use validate::{validate, validate_records, Checked};
pub use zones::{import_zones, MultiSummary};

use backend_mongo::{StoreError, WriteMode, WriteStats};

use dns::presentation::ParseError;
use dns::{Name, ZoneInfo};
use std::path::PathBuf;
use std::time::Duration;

/// Settings of one import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The zone's apex.
    pub zone: Name,
    /// Replace the zone's content (atomically) instead of merging into it.
    pub replace: bool,
    /// Nodes per bulk write.
    pub batch_size: usize,
    /// Bulk writes in flight at once.
    pub in_flight: usize,
    /// Time to keep an old version readable after switching (Replace).
    pub grace: Duration,
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is not a valid zone; nothing was written.
    #[error("{0}")]
    Parse(#[from] ParseError),
    /// The file parses but is not a valid zone; nothing was written.
    #[error("{file}:{line}: {message}")]
    Invalid {
        /// The file.
        file: PathBuf,
        /// The line of the offending record.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A zone-level problem found after reading the whole file.
    #[error("{0}")]
    Zone(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an import did.
#[derive(Clone, Debug)]
pub struct ImportSummary {
    /// Records read from the file.
    pub records: u64,
    /// Node documents inserted and merged.
    pub writes: WriteStats,
    /// Wall-clock time.
    pub elapsed: Duration,
    /// The zone as now served.
    pub zone: ZoneInfo,
    /// Records skipped because a killed run of the same input stored them.
    pub resumed_from: u64,
    /// Records of the types the signer maintains (RRSIG, NSEC, NSEC3,
    /// NSEC3PARAM, DNSKEY, CDS, CDNSKEY) left out: `mongodns-sign` makes
    /// its own when it secures the zone.
    pub signer_owned: u64,
}

/// Progress callbacks (a progress bar, or nothing): the signer's trait, one
/// for both tools. An import is one phase, `"importing"`, whose total is the
/// record count validation found; `set` gets the records written so far.
pub use signer::{NoProgress, Progress};

/// The name of the import's one progress phase.
pub const IMPORT_PHASE: &str = "importing";

/// Settings beyond [`ImportOptions`] for long-running and large imports.
#[derive(Clone, Debug, Default)]
pub struct ImportTuning {
    /// Write at most this many records per second (steady load).
    pub rate: Option<f64>,
    /// `Merge` into a served zone: make the records written so far visible
    /// (serial and generation bumped) this often, instead of only at the end.
    pub publish_every: Option<Duration>,
    /// Keep a resume checkpoint in the database, and use one left by a
    /// killed run of the same input.
    pub resumable: bool,
}

impl ImportError {
    /// Signing the data of a secured zone failed.
    fn signing(e: signer::SignError) -> Self {
        ImportError::Zone(format!("signing for the secured zone: {e}"))
    }
}

/// Replace or merge, as the options ask.
fn write_mode(options: &ImportOptions) -> WriteMode {
    if options.replace {
        WriteMode::Replace
    } else {
        WriteMode::Merge
    }
}
