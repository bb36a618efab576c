//! Importing a master file into a zone.
//!
//! ```text
//!  pass 1  validate: ZoneFileReader ─► every record checked (in zone, SOA at
//!          the apex only, CNAME alone at its name) ─ any error ─► stop, nothing written
//!  pass 2  ZoneFileReader ─► group by owner ─► NodeWrite (+ empty non-terminals)
//!          ─► batches ─► up to `in_flight` unordered bulk writes at once
//!  finish  ZoneWriter::finish: serial, generation, switch version
//! ```

use crate::zonefile::{ParseError, Record, ZoneFileReader};
use backend_mongo::{
    Name, NodeWrite, RRset, RType, Store, StoreError, WriteMode, WriteStats, ZoneInfo, ZoneWriter,
};
use futures::stream::{FuturesUnordered, StreamExt};
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
}

/// Progress callbacks (a progress bar, or nothing).
pub trait Progress {
    /// Called with the total once validation counted the records.
    fn start(&self, total: u64);
    /// Called as records are written.
    fn advance(&self, records: u64);
}

/// Progress that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn advance(&self, _: u64) {}
}

fn invalid(record: &Record, message: impl Into<String>) -> ImportError {
    ImportError::Invalid {
        file: record.location.file.as_ref().clone(),
        line: record.location.line,
        message: message.into(),
    }
}

/// Pass 1: reads the whole file and checks it; returns the record count.
pub fn validate(path: &Path, zone: &Name, must_have_soa: bool) -> Result<u64, ImportError> {
    let mut count = 0u64;
    let mut soa_seen = false;
    // Types seen at the current owner (owners are usually contiguous).
    let mut owner: Option<Name> = None;
    let mut types: Vec<RType> = Vec::new();
    for record in ZoneFileReader::open(path, zone.clone(), None)? {
        let record = record?;
        count += 1;
        if !record.owner.is_subdomain_of(zone) {
            return Err(invalid(
                &record,
                format!("{} is outside the zone {zone}", record.owner),
            ));
        }
        if record.rtype.is_meta() {
            return Err(invalid(
                &record,
                format!("{} cannot be stored in a zone", record.rtype),
            ));
        }
        if record.rtype == RType::SOA {
            if record.owner != *zone {
                return Err(invalid(&record, "SOA is only allowed at the zone apex"));
            }
            if soa_seen {
                return Err(invalid(&record, "more than one SOA record"));
            }
            soa_seen = true;
        }
        if owner.as_ref() != Some(&record.owner) {
            owner = Some(record.owner.clone());
            types.clear();
        }
        if !types.contains(&record.rtype) {
            types.push(record.rtype);
        }
        let has_cname = types.contains(&RType::CNAME);
        let dnssec = |t: &RType| matches!(*t, RType::CNAME | RType::RRSIG | RType::NSEC);
        if has_cname && !types.iter().all(dnssec) {
            return Err(invalid(
                &record,
                format!("{} has a CNAME and other data", record.owner),
            ));
        }
        if record.rtype == RType::CNAME && record.owner == *zone {
            return Err(invalid(&record, "a CNAME at the zone apex is not allowed"));
        }
    }
    if must_have_soa && !soa_seen {
        return Err(ImportError::Zone(format!(
            "{}: no SOA record for {zone}: a new zone, or one loaded with --replace, needs one",
            path.display()
        )));
    }
    Ok(count)
}

/// Groups records by owner and type into node writes, adding the empty
/// non-terminals between each owner and the apex.
struct NodeBuilder {
    zone: Name,
    current: Option<NodeWrite>,
    /// Recently emitted names, so ancestors are not written over and over.
    recent: HashSet<Name>,
    recent_order: VecDeque<Name>,
}

const RECENT: usize = 4096;

impl NodeBuilder {
    fn new(zone: Name) -> Self {
        NodeBuilder {
            zone,
            current: None,
            recent: HashSet::new(),
            recent_order: VecDeque::new(),
        }
    }

    fn remember(&mut self, name: &Name) -> bool {
        if self.recent.contains(name) {
            return false;
        }
        if self.recent_order.len() == RECENT {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
        self.recent.insert(name.clone());
        self.recent_order.push_back(name.clone());
        true
    }

    /// Adds a record; pushes finished nodes to `out`.
    fn add(&mut self, record: Record, out: &mut Vec<NodeWrite>) {
        if self
            .current
            .as_ref()
            .is_some_and(|n| n.name != record.owner)
        {
            out.push(self.current.take().expect("checked"));
        }
        if self.current.is_none() {
            // Empty non-terminals: every ancestor strictly between owner and apex.
            let depth = record.owner.label_count() - self.zone.label_count();
            let ancestors: Vec<Name> = record
                .owner
                .ancestors()
                .skip(1)
                .take(depth.saturating_sub(1))
                .collect();
            for ancestor in ancestors {
                if self.remember(&ancestor) {
                    out.push(NodeWrite {
                        name: ancestor,
                        rrsets: Vec::new(),
                    });
                }
            }
            self.remember(&record.owner);
            self.current = Some(NodeWrite {
                name: record.owner.clone(),
                rrsets: Vec::new(),
            });
        }
        let node = self.current.as_mut().expect("set above");
        match node.rrsets.iter_mut().find(|r| r.rtype == record.rtype) {
            Some(rrset) => {
                // Duplicate records in an RRset are one record (RFC 2181 §5).
                if !rrset.rdata.iter().any(|r| r[..] == record.rdata[..]) {
                    rrset.rdata.push(record.rdata.into_boxed_slice());
                }
                rrset.ttl = rrset.ttl.min(record.ttl);
            }
            None => node.rrsets.push(RRset {
                rtype: record.rtype,
                ttl: record.ttl,
                rdata: vec![record.rdata.into_boxed_slice()],
            }),
        }
    }

    fn finish(&mut self, out: &mut Vec<NodeWrite>) {
        if let Some(node) = self.current.take() {
            out.push(node);
        }
    }
}

/// Imports `path` into the zone: validates it all, then writes it.
pub async fn import_file(
    store: &Store,
    path: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportSummary, ImportError> {
    let started = Instant::now();
    let mode = if options.replace {
        WriteMode::Replace
    } else {
        WriteMode::Merge
    };
    let exists = store.find_zone(&options.zone).await?.is_some();
    let must_have_soa = options.replace || !exists;
    // Validation reads the file without holding it; it runs on a blocking thread.
    let total = {
        let path = path.to_path_buf();
        let zone = options.zone.clone();
        tokio::task::spawn_blocking(move || validate(&path, &zone, must_have_soa))
            .await
            .map_err(|e| ImportError::Zone(format!("validation thread failed: {e}")))??
    };
    progress.start(total);
    let writer = store.begin_zone_write(&options.zone, mode).await?;
    // A merge into a secured zone is signed before it is written (docs/dnssec.md).
    let mut merge_signer = if writer.mode() == WriteMode::Merge {
        signer::merge::MergeSigner::new(store, &options.zone, writer.ver())
            .await
            .map_err(signing_failed)?
    } else {
        None
    };
    let mut builder = NodeBuilder::new(options.zone.clone());
    let mut batch: Vec<NodeWrite> = Vec::with_capacity(options.batch_size + 16);
    let mut batch_records = 0u64;
    let mut pending = FuturesUnordered::new();
    let mut stats = WriteStats::default();
    let mut written_records = 0u64;
    // The reader is synchronous and fast; batches are written concurrently.
    let reader = ZoneFileReader::open(path, options.zone.clone(), None)?;
    for record in reader {
        let record = record?;
        builder.add(record, &mut batch);
        batch_records += 1;
        if batch.len() >= options.batch_size {
            let full = std::mem::take(&mut batch);
            let n = std::mem::take(&mut batch_records);
            if let Some(signer) = merge_signer.as_mut() {
                add_stats(
                    &mut stats,
                    signer
                        .write_batch(store, &full)
                        .await
                        .map_err(signing_failed)?,
                );
                written_records += n;
                progress.advance(written_records);
                continue;
            }
            pending.push(write_batch(&writer, full, n));
            while pending.len() >= options.in_flight.max(1) {
                if let Some((r, n)) = pending.next().await {
                    add_stats(&mut stats, r?);
                    written_records += n;
                    progress.advance(written_records);
                }
            }
        }
    }
    builder.finish(&mut batch);
    if !batch.is_empty() {
        let full = std::mem::take(&mut batch);
        let n = batch_records;
        match merge_signer.as_mut() {
            Some(signer) => {
                add_stats(
                    &mut stats,
                    signer
                        .write_batch(store, &full)
                        .await
                        .map_err(signing_failed)?,
                );
                written_records += n;
                progress.advance(written_records);
            }
            None => pending.push(write_batch(&writer, full, n)),
        }
    }
    while let Some((r, n)) = pending.next().await {
        add_stats(&mut stats, r?);
        written_records += n;
        progress.advance(written_records);
    }
    drop(pending);
    // A secured zone stays signed (docs/dnssec.md): a new version is signed
    // before readers switch to it; a merge was signed batch by batch, and
    // its SOA is signed with the new serial before `finish` publishes it.
    if writer.mode() == WriteMode::Replace {
        let served_serial = writer.previous().map(|p| p.serial);
        signer::sign_after_write(store, &options.zone, writer.ver(), served_serial, false)
            .await
            .map_err(signing_failed)?;
    }
    if let Some(signer) = merge_signer.as_mut() {
        let served = writer.previous().map_or(0, |p| p.serial);
        signer
            .sign_soa(store, served)
            .await
            .map_err(signing_failed)?;
    }
    let mut zone = writer.finish(options.grace).await?;
    if merge_signer.as_ref().is_some_and(|s| s.needs_full_resign()) {
        // A delegation or DNAME appeared above existing names.
        if let Some(r) = signer::sign_after_write(store, &options.zone, zone.ver, None, true)
            .await
            .map_err(signing_failed)?
        {
            zone.serial = r.serial;
        }
    }
    Ok(ImportSummary {
        records: total,
        writes: stats,
        elapsed: started.elapsed(),
        zone,
    })
}

fn signing_failed(e: signer::SignError) -> ImportError {
    ImportError::Zone(format!("signing for the secured zone: {e}"))
}

async fn write_batch(
    writer: &ZoneWriter,
    batch: Vec<NodeWrite>,
    records: u64,
) -> (Result<WriteStats, StoreError>, u64) {
    (writer.write_nodes(&batch).await, records)
}

fn add_stats(total: &mut WriteStats, more: WriteStats) {
    total.inserted += more.inserted;
    total.merged += more.merged;
}
