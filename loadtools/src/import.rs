//! Importing a master file into a zone.
//!
//! ```text
//!  pass 1  validate: ZoneFileReader ─► every record checked (in zone, SOA at
//!          the apex only, CNAME alone at its name) ─ any error ─► stop, nothing written
//!  pass 2  ZoneFileReader ─► group by owner ─► NodeWrite (+ empty non-terminals)
//!          ─► batches ─► up to `in_flight` unordered bulk writes at once
//!  finish  ZoneWriter::finish: serial, generation, switch version
//! ```

use backend_mongo::lock::{SIGN_LEASE, ZONE_LOCK};
use backend_mongo::writer::{NodeImages, LOCK_WAIT};
use backend_mongo::{
    BaselineWriter, Name, NodeWrite, RRset, RType, Store, StoreError, WriteMode, WriteStats,
    ZoneContent, ZoneInfo, ZoneWriter,
};
use dns::presentation::{ParseError, Record, ZoneFileReader};
use futures::stream::{FuturesUnordered, StreamExt};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

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
}

/// Progress callbacks (a progress bar, or nothing): the signer's trait, one
/// for both tools. An import is one phase, `"importing"`, whose total is the
/// record count validation found; `set` gets the records written so far.
pub use signer::{NoProgress, Progress};

/// The name of the import's one progress phase.
pub const IMPORT_PHASE: &str = "importing";

/// Pass 1: reads the whole file and checks it; returns the record count.
pub fn validate(path: &Path, zone: &Name, must_have_soa: bool) -> Result<u64, ImportError> {
    let reader = ZoneFileReader::open(path, zone.clone(), None)?;
    validate_records(reader, path, zone, must_have_soa, 0)
}

/// Checks the records of one zone read by `reader`; `line_offset` is added
/// to line numbers (a zone inside a multi-zone file).
pub fn validate_records(
    reader: ZoneFileReader,
    path: &Path,
    zone: &Name,
    must_have_soa: bool,
    line_offset: usize,
) -> Result<u64, ImportError> {
    let mut count = 0u64;
    let mut soa_seen = false;
    // Types seen at the current owner (owners are usually contiguous).
    let mut owner: Option<Name> = None;
    let mut types: Vec<RType> = Vec::new();
    let invalid = |record: &Record, message: String| ImportError::Invalid {
        file: record.location.file.as_ref().clone(),
        line: record.location.line + line_offset,
        message,
    };
    for record in reader {
        let record = record.map_err(|mut e| {
            e.line += line_offset;
            e
        })?;
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
                return Err(invalid(
                    &record,
                    "SOA is only allowed at the zone apex".into(),
                ));
            }
            if soa_seen {
                return Err(invalid(&record, "more than one SOA record".into()));
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
            return Err(invalid(
                &record,
                "a CNAME at the zone apex is not allowed".into(),
            ));
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
///
/// It also knows how far the input is *complete*: after any call, every
/// record before `complete` is in a node already pushed out. A batch cut
/// then holds the input's records up to that point, which is what a resume
/// checkpoint needs.
struct NodeBuilder {
    zone: Name,
    current: Option<NodeWrite>,
    /// Recently emitted names, so ancestors are not written over and over.
    recent: HashSet<Name>,
    recent_order: VecDeque<Name>,
    /// Records added so far.
    consumed: u64,
    /// Records that are in nodes already pushed out.
    complete: u64,
}

const RECENT: usize = 4096;

impl NodeBuilder {
    fn new(zone: Name, start: u64) -> Self {
        NodeBuilder {
            zone,
            current: None,
            recent: HashSet::new(),
            recent_order: VecDeque::new(),
            consumed: start,
            complete: start,
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
            self.complete = self.consumed;
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
        self.consumed += 1;
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
        self.complete = self.consumed;
    }
}

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

/// One unit of work for the writers.
struct Job {
    /// Position in the input (0, 1, 2, …).
    no: u64,
    /// Records in this job (for progress and rate).
    records: u64,
    /// Resume position once this job and all before it are stored.
    end: u64,
    payload: Payload,
}

enum Payload {
    Nodes(Vec<NodeWrite>),
    Zones(Vec<ZoneContent>),
}

/// Where jobs go.
#[derive(Clone)]
enum Target {
    Zone(Arc<ZoneWriter>),
    Zones {
        store: Store,
        mode: WriteMode,
        grace: Duration,
    },
    Baseline(Arc<BaselineWriter>),
}

impl Target {
    async fn write(self, payload: Payload) -> Result<WriteStats, StoreError> {
        match (self, payload) {
            (Target::Zone(w), Payload::Nodes(nodes)) => w.write_nodes(&nodes).await,
            (Target::Zones { store, mode, grace }, Payload::Zones(zones)) => {
                store.write_zones(&zones, mode, grace).await
            }
            (Target::Baseline(b), Payload::Nodes(nodes)) => Ok(WriteStats {
                inserted: b.insert(&nodes).await?,
                merged: 0,
            }),
            (Target::Baseline(b), Payload::Zones(zones)) => {
                let nodes: Vec<NodeWrite> = zones.into_iter().flat_map(|z| z.nodes).collect();
                Ok(WriteStats {
                    inserted: b.insert(&nodes).await?,
                    merged: 0,
                })
            }
            _ => unreachable!("a job of the wrong kind"),
        }
    }
}

/// What to do with the resume position as it moves.
enum Checkpoint<'a> {
    None,
    Zone(&'a ZoneWriter),
    Meta(&'a Store, &'a str),
}

/// Runs jobs with up to `in_flight` in flight, paced by `rate`; keeps the
/// checkpoint and publishes as asked. Returns the stats and records written.
#[allow(clippy::too_many_arguments)]
async fn run_jobs(
    mut jobs: mpsc::Receiver<Job>,
    target: Target,
    in_flight: usize,
    tuning: &ImportTuning,
    checkpoint: Checkpoint<'_>,
    publisher: Option<&ZoneWriter>,
    progress: &dyn Progress,
    records_before: u64,
) -> Result<(WriteStats, u64), ImportError> {
    let started = Instant::now();
    let mut pending = FuturesUnordered::new();
    let mut stats = WriteStats::default();
    let mut dispatched = 0u64;
    let mut written = records_before;
    let mut done_ends: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next_no = 0u64;
    let mut resume_at = None;
    let mut acknowledged_at = None;
    let mut saved_at = None;
    let mut last_save = Instant::now();
    let mut last_publish = Instant::now();
    let mut input_open = true;
    loop {
        enum Event {
            Job(Option<Job>),
            Done(Option<Done>),
        }
        let event = if input_open && pending.len() < in_flight.max(1) {
            tokio::select! {
                job = jobs.recv() => Event::Job(job),
                done = pending.next(), if !pending.is_empty() => Event::Done(done),
            }
        } else if !pending.is_empty() {
            Event::Done(pending.next().await)
        } else {
            break;
        };
        let next = match event {
            Event::Job(job) => Some(job),
            Event::Done(Some(done)) => {
                finished(done, &mut stats, &mut written, &mut done_ends)?;
                None
            }
            Event::Done(None) => None,
        };
        if let Some(job) = next {
            match job {
                None => input_open = false,
                Some(job) => {
                    if let Some(rate) = tuning.rate {
                        let due = started + Duration::from_secs_f64(dispatched as f64 / rate);
                        tokio::time::sleep_until(due.into()).await;
                    }
                    dispatched += job.records;
                    let t = target.clone();
                    let (no, records, end) = (job.no, job.records, job.end);
                    pending.push(tokio::spawn(async move {
                        (no, records, end, t.write(job.payload).await)
                    }));
                }
            }
        }
        while let Some(end) = done_ends.remove(&next_no) {
            next_no += 1;
            resume_at = Some(end);
        }
        progress.set(written);
        if let (Some(every), Some(w)) = (tuning.publish_every, publisher) {
            if last_publish.elapsed() >= every {
                let at = resume_at;
                w.publish().await?;
                acknowledged_at = at;
                last_publish = Instant::now();
            }
        }
        // A merge's resume position only covers acknowledged batches: a
        // re-run skips them, and a batch written but not acknowledged by a
        // killed run is in no change record, so a signer switching the
        // zone meanwhile would not carry it (the re-run writes it again).
        let safe = if publisher.is_some() {
            acknowledged_at
        } else {
            resume_at
        };
        if last_save.elapsed() >= CHECKPOINT_EVERY && safe != saved_at {
            if let Some(at) = safe {
                save_checkpoint(&checkpoint, at).await?;
                saved_at = safe;
            }
            last_save = Instant::now();
        }
    }
    Ok((stats, written))
}

const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

type Done = Result<(u64, u64, u64, Result<WriteStats, StoreError>), tokio::task::JoinError>;

fn finished(
    done: Done,
    stats: &mut WriteStats,
    written: &mut u64,
    done_ends: &mut BTreeMap<u64, u64>,
) -> Result<(), ImportError> {
    let (no, records, end, result) =
        done.map_err(|e| ImportError::Zone(format!("writer task failed: {e}")))?;
    let s = result?;
    stats.inserted += s.inserted;
    stats.merged += s.merged;
    *written += records;
    done_ends.insert(no, end);
    Ok(())
}

async fn save_checkpoint(checkpoint: &Checkpoint<'_>, at: u64) -> Result<(), StoreError> {
    match checkpoint {
        Checkpoint::None => Ok(()),
        Checkpoint::Zone(w) => w.checkpoint(at).await,
        Checkpoint::Meta(store, key) => store.set_import_checkpoint(key, Some(at)).await,
    }
}

/// Identity of an input file for resuming: path, size and modification time.
pub fn input_key(path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let meta = std::fs::metadata(path).ok();
    let len = meta.as_ref().map_or(0, |m| m.len());
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{}|{len}|{mtime}", canonical.display())
}

/// Reads a zone file on a thread: skips `skip` records, groups the rest
/// into node batches and sends them as jobs.
fn spawn_node_reader(
    reader: ZoneFileReader,
    zone: Name,
    skip: u64,
    batch_size: usize,
    tx: mpsc::Sender<Job>,
) -> std::thread::JoinHandle<Result<(), ImportError>> {
    std::thread::spawn(move || {
        let mut builder = NodeBuilder::new(zone, skip);
        let mut batch: Vec<NodeWrite> = Vec::with_capacity(batch_size + 16);
        let mut batch_records = 0u64;
        let mut no = 0u64;
        let mut seen = 0u64;
        let mut send = |nodes: Vec<NodeWrite>, records: u64, end: u64| {
            let job = Job {
                no,
                records,
                end,
                payload: Payload::Nodes(nodes),
            };
            no += 1;
            tx.blocking_send(job).is_ok()
        };
        for record in reader {
            let record = record?;
            seen += 1;
            if seen <= skip {
                continue;
            }
            builder.add(record, &mut batch);
            batch_records += 1;
            if batch.len() >= batch_size {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_size + 16));
                if !send(full, std::mem::take(&mut batch_records), builder.complete) {
                    return Ok(());
                }
            }
        }
        builder.finish(&mut batch);
        if !batch.is_empty() || batch_records > 0 {
            send(batch, batch_records, builder.complete);
        }
        Ok(())
    })
}

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
///
/// ```text
///  validate (pass 1) ─► begin (resume position from the zone document)
///  reader thread: skip, group, batch ─► jobs ─► up to in_flight bulk writes
///  (tasks) ─► contiguous prefix done ─► checkpoint every 0.5 s ─► finish
/// ```
pub async fn import_file_with(
    store: &Store,
    path: &Path,
    options: &ImportOptions,
    tuning: &ImportTuning,
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
    progress.phase(IMPORT_PHASE, total);
    let key = tuning.resumable.then(|| input_key(path));
    let (writer, skip) = store
        .begin_resumable_write(&options.zone, mode, key.as_deref())
        .await?;
    // A merge into a secured zone is signed before it is written
    // (docs/dnssec.md), under the zone's signing lease; when another signer
    // holds it, the merge is written unsigned and its change records hand
    // the names to that signer (docs/schema.md, "Concurrency").
    let start_gen = writer.previous().map_or(0, |p| p.gen);
    let mut lease = None;
    let mut merge_signer = None;
    if writer.mode() == WriteMode::Merge && zone_secured(store, &options.zone).await? {
        lease = signer::lease::try_take(store, &options.zone, "import")
            .await
            .map_err(signing_failed)?;
        if lease.is_some() {
            match signer::merge::MergeSigner::new(store, &options.zone, writer.ver()).await {
                Ok(s) => {
                    // Before-images of what it signs, for the journal.
                    merge_signer = s.map(|mut s| {
                        s.keep_images(Some(NodeImages::new(
                            &options.zone,
                            writer.ver(),
                            start_gen,
                        )));
                        s
                    })
                }
                // The version began into was switched away and deleted
                // meanwhile: write unsigned (the merge follows the switch)
                // and sign what was written at the end, as below.
                Err(_) if served_ver(store, &options.zone).await? != Some(writer.ver()) => {
                    tracing::info!(zone = %options.zone,
                        "the zone was switched as the merge began: writing unsigned, signed at the end");
                    if let Some(l) = lease.take() {
                        l.release_with(Ok(())).await.map_err(signing_failed)?;
                    }
                }
                Err(e) => return Err(signing_failed(e)),
            }
        } else {
            tracing::info!(zone = %options.zone,
                "another signer holds the zone's lease: writing unsigned, the holder signs");
        }
    }
    let writer = Arc::new(writer);
    let (tx, mut rx) = mpsc::channel(options.in_flight.max(1) * 2);
    let reader = ZoneFileReader::open(path, options.zone.clone(), None)?;
    let thread = spawn_node_reader(
        reader,
        options.zone.clone(),
        skip,
        options.batch_size.max(1),
        tx,
    );
    let publisher = (writer.mode() == WriteMode::Merge).then_some(writer.as_ref());
    let checkpoint = || {
        if key.is_some() {
            Checkpoint::Zone(writer.as_ref())
        } else {
            Checkpoint::None
        }
    };
    let mut yielded = false;
    let result = match merge_signer.as_mut() {
        // Signed merges go batch by batch, in input order: each batch relinks
        // the NSEC/NSEC3 chain around the names it adds.
        Some(signer) => match signed_jobs(store, &writer, signer, &mut rx, skip, progress).await {
            Ok((stats, _, false)) => Ok((stats, 0)),
            Ok((before, written, true)) => {
                // A signer waits for the lease: hand it over and write the
                // rest unsigned (its change records give the names to it).
                yielded = true;
                if let Some(l) = lease.take() {
                    l.release_with(Ok(())).await.map_err(signing_failed)?;
                }
                writer.note_unsigned();
                tracing::info!(zone = %options.zone,
                    "a signer waits for the zone's lease: handed over; the rest of the import is written unsigned");
                let rest = run_jobs(
                    rx,
                    Target::Zone(writer.clone()),
                    options.in_flight,
                    tuning,
                    checkpoint(),
                    publisher,
                    progress,
                    written,
                )
                .await;
                rest.map(|(s, w)| {
                    let stats = WriteStats {
                        inserted: before.inserted + s.inserted,
                        merged: before.merged + s.merged,
                    };
                    (stats, w)
                })
            }
            Err(e) => Err(e),
        },
        None => {
            run_jobs(
                rx,
                Target::Zone(writer.clone()),
                options.in_flight,
                tuning,
                checkpoint(),
                publisher,
                progress,
                skip,
            )
            .await
        }
    };
    if yielded {
        merge_signer = None;
    }
    let read = thread
        .join()
        .map_err(|_| ImportError::Zone("reader thread panicked".into()))?;
    let (stats, _) = result?;
    read?;
    let writer = Arc::try_unwrap(writer)
        .map_err(|_| ImportError::Zone("a writer task is still running".into()))?;
    // A secured zone stays signed (docs/dnssec.md): a new version is signed
    // before readers switch to it; a merge was signed batch by batch, and
    // its SOA is signed with the new serial before `finish` publishes it.
    // The new version is not served yet: no other signer touches it, so
    // signing it needs no lease (resign --follow re-signs after the switch).
    let signed_replace =
        writer.mode() == WriteMode::Replace && zone_secured(store, &options.zone).await?;
    if signed_replace {
        let served_serial = writer.previous().map(|p| p.serial);
        let signed =
            signer::sign_after_write(store, &options.zone, writer.ver(), served_serial, false)
                .await;
        if let Err(e) = signed {
            // A version taken over by another writer is being deleted:
            // say so, rather than what signing its missing nodes found.
            writer.ensure_still_pending().await?;
            return Err(signing_failed(e));
        }
    }
    if let Some(signer) = merge_signer.as_mut() {
        // The serial as served now: other writers may have moved it.
        let served = store
            .find_zone(&options.zone)
            .await?
            .map_or(0, |z| z.serial);
        signer
            .sign_soa(store, served)
            .await
            .map_err(signing_failed)?;
        writer.note_signed(std::iter::once(&options.zone));
        writer.keep_signed_images(signer.take_images());
    }
    let unsigned_since = (merge_signer.is_none() && writer.mode() == WriteMode::Merge)
        // A resumed run skipped records a killed one wrote unsigned, before
        // any generation it knows of: re-sign from the start (a full pass).
        .then(|| {
            if skip > 0 {
                0
            } else {
                writer.moved_at_gen().unwrap_or(start_gen)
            }
        });
    let mut zone = match signed_replace {
        true => switch_signed_replace(store, writer, options.grace).await?,
        false => writer.finish(options.grace).await?,
    };
    if merge_signer.as_ref().is_some_and(|s| s.needs_full_resign()) {
        // A delegation or DNAME appeared above existing names.
        if let Some(r) = signer::sign_after_write(store, &options.zone, zone.ver, None, true)
            .await
            .map_err(signing_failed)?
        {
            zone.serial = r.serial;
        }
    }
    if let Some(since) = unsigned_since {
        if let Some(r) = sign_unsigned_writes(store, &options.zone, since, lease.take()).await? {
            zone.serial = r.serial;
        }
    }
    if let Some(l) = lease {
        // Writers that found the lease held wrote unsigned meanwhile and
        // handed their names to this import.
        let handed = signer::handoff::sign_handed_over(store, &options.zone, start_gen).await;
        if let Some(r) = l.release_with(handed).await.map_err(signing_failed)? {
            zone.serial = r.serial;
        }
    }
    Ok(ImportSummary {
        records: total,
        writes: stats,
        elapsed: started.elapsed(),
        zone,
        resumed_from: skip,
    })
}

/// The signed part of a merge: batches signed and acknowledged one at a
/// time until the input ends, or until a signer waits for the zone's lease
/// (then `true`: the caller hands the lease over). Returns the counts and
/// the records written so far.
async fn signed_jobs(
    store: &Store,
    writer: &ZoneWriter,
    signer: &mut signer::merge::MergeSigner,
    rx: &mut mpsc::Receiver<Job>,
    skip: u64,
    progress: &dyn Progress,
) -> Result<(WriteStats, u64, bool), ImportError> {
    // The signer writes the names, their chain neighbours and NSEC3
    // owners itself: the change record lists those, marked signed.
    writer.note_signed(std::iter::once(writer.zone()));
    let mut stats = WriteStats::default();
    let mut written = skip;
    while let Some(job) = rx.recv().await {
        let Payload::Nodes(nodes) = job.payload else {
            continue;
        };
        let s = signed_batch(store, writer, signer, &nodes).await?;
        stats.inserted += s.inserted;
        stats.merged += s.merged;
        written += job.records;
        progress.set(written);
        if store.is_wanted(SIGN_LEASE, writer.zone()).await? {
            return Ok((stats, written, true));
        }
    }
    Ok((stats, written, false))
}

/// Writes one batch of a signed merge and acknowledges it under the zone
/// lock; when a replace switched the zone meanwhile, the signer moves to
/// the version now served and the batch is written (signed) there again.
async fn signed_batch(
    store: &Store,
    writer: &ZoneWriter,
    signer: &mut signer::merge::MergeSigner,
    nodes: &[NodeWrite],
) -> Result<WriteStats, ImportError> {
    let mut stats = signer
        .write_batch(store, nodes)
        .await
        .map_err(signing_failed)?;
    writer.note_signed(signer.take_touched().iter());
    while let Some(ver) = writer.acknowledge_signed().await? {
        tracing::info!(zone = %writer.zone(), ver,
            "another writer switched the zone while merging: the batch is signed into the version now served");
        match signer::merge::MergeSigner::new(store, writer.zone(), ver).await {
            Ok(Some(s)) => *signer = s,
            Ok(None) => {
                return Err(ImportError::Zone(format!(
                    "zone {} is no longer secured",
                    writer.zone()
                )))
            }
            // The version vanished under us (replaced again, and deleted):
            // the next acknowledgement names the one served now.
            Err(e) if store.find_zone(writer.zone()).await?.map(|z| z.ver) != Some(ver) => {
                tracing::info!(error = %e, "the version moved again; following it");
                continue;
            }
            Err(e) => return Err(signing_failed(e)),
        }
        stats = signer
            .write_batch(store, nodes)
            .await
            .map_err(signing_failed)?;
        writer.note_signed(signer.take_touched().iter());
    }
    Ok(stats)
}

/// Publishes a signed replace: under the zone lock, its SOA moved past
/// the served serial and signed again when other writers moved that on
/// while the new version was signed (else the switch would move it
/// unsigned), then the switch; the old version deleted after `grace`.
async fn switch_signed_replace(
    store: &Store,
    writer: ZoneWriter,
    grace: Duration,
) -> Result<ZoneInfo, ImportError> {
    let zone = writer.zone().clone();
    let fence = store
        .lock(ZONE_LOCK, &zone, "import-switch", LOCK_WAIT)
        .await?;
    let switched = async {
        let Some(served) = store.find_zone(&zone).await? else {
            return Err(ImportError::Zone(format!(
                "zone {zone} is no longer served"
            )));
        };
        if let Err(e) = signer::soa::sign_soa_past(store, &zone, writer.ver(), served.serial).await
        {
            writer.ensure_still_pending().await?;
            return Err(signing_failed(e));
        }
        Ok(writer
            .switch_under(&fence, served.ver, Default::default())
            .await?)
    }
    .await;
    fence.release().await?;
    let switched = switched?;
    if switched.old.is_some() {
        store.collect_old_versions(&zone, grace, &|_| {}).await?;
    }
    Ok(switched.zone)
}

/// The version of `zone` served now, if it is served.
async fn served_ver(store: &Store, zone: &Name) -> Result<Option<i64>, ImportError> {
    Ok(store.find_zone(zone).await?.map(|z| z.ver))
}

/// True when `zone` is secured (its writes must be signed).
async fn zone_secured(store: &Store, zone: &Name) -> Result<bool, ImportError> {
    Ok(signer::handoff::zone_secured(store, zone).await?)
}

/// After an unsigned merge: signs what writers changed since `since` if
/// the zone is secured ([`signer::handoff::sign_unsigned_writes`]).
async fn sign_unsigned_writes(
    store: &Store,
    zone: &Name,
    since: i64,
    lease: Option<signer::lease::Lease>,
) -> Result<Option<signer::Report>, ImportError> {
    signer::handoff::sign_unsigned_writes(store, zone, since, lease, "import")
        .await
        .map_err(signing_failed)
}

fn signing_failed(e: signer::SignError) -> ImportError {
    ImportError::Zone(format!("signing for the secured zone: {e}"))
}

/// Where the zones of a multi-zone import come from.
#[derive(Clone, Debug)]
pub enum ZoneSource {
    /// One file with `$ZONE <apex>` lines before each zone.
    MultiFile(PathBuf),
    /// A directory: one file per zone, named `<apex>` or `<apex>.zone`
    /// (the final dot of the apex may be left out), read in name order.
    Directory(PathBuf),
}

/// One zone's text in a multi-zone input.
struct Section {
    apex: Name,
    /// The file it is in.
    file: PathBuf,
    /// Lines before the section's first line (for error messages).
    line_offset: usize,
    text: String,
}

impl Section {
    fn reader(&self) -> ZoneFileReader {
        ZoneFileReader::from_reader(
            self.file.clone(),
            Box::new(std::io::Cursor::new(self.text.clone().into_bytes())),
            self.apex.clone(),
            None,
        )
    }
}

/// Largest zone accepted inside a multi-zone input (it is held in memory).
pub const MAX_SECTION_BYTES: usize = 64 << 20;

/// Streams the zones of a source, one at a time.
fn sections(
    source: &ZoneSource,
) -> Result<Box<dyn Iterator<Item = Result<Section, ImportError>> + Send>, ImportError> {
    match source {
        ZoneSource::MultiFile(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| ImportError::Zone(format!("{}: {e}", path.display())))?;
            let lines = std::io::BufReader::with_capacity(1 << 20, file).lines();
            Ok(Box::new(MultiFileSections {
                path: path.clone(),
                lines,
                line: 0,
                next: None,
                done: false,
            }))
        }
        ZoneSource::Directory(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| ImportError::Zone(format!("{}: {e}", dir.display())))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            Ok(Box::new(files.into_iter().map(|file| {
                let stem = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                let apex_text = stem.strip_suffix("zone").unwrap_or(stem);
                let apex_text = apex_text.strip_suffix('.').unwrap_or(apex_text);
                let apex = Name::parse(&format!("{apex_text}."), None).map_err(|e| {
                    ImportError::Zone(format!(
                        "{}: file name is not a zone name: {e}",
                        file.display()
                    ))
                })?;
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| ImportError::Zone(format!("{}: {e}", file.display())))?;
                Ok(Section {
                    apex,
                    file,
                    line_offset: 0,
                    text,
                })
            })))
        }
    }
}

struct MultiFileSections {
    path: PathBuf,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    line: usize,
    /// The `$ZONE` line read ahead: (apex, its line number).
    next: Option<(Name, usize)>,
    done: bool,
}

impl MultiFileSections {
    fn err(&self, line: usize, message: String) -> ImportError {
        ImportError::Invalid {
            file: self.path.clone(),
            line,
            message,
        }
    }
}

impl Iterator for MultiFileSections {
    type Item = Result<Section, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut text = String::new();
        loop {
            let line = match self.lines.next() {
                None => {
                    self.done = true;
                    break;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(ImportError::Zone(format!(
                        "{}: {e}",
                        self.path.display()
                    ))));
                }
                Some(Ok(l)) => l,
            };
            self.line += 1;
            if let Some(rest) = line.strip_prefix("$ZONE") {
                let apex_text = rest.split(';').next().unwrap_or_default().trim();
                let apex = match Name::parse(apex_text, Some(&Name::root())) {
                    Ok(a) if !apex_text.is_empty() => a,
                    Ok(_) => {
                        return Some(Err(self.err(self.line, "$ZONE needs a zone name".into())))
                    }
                    Err(e) => return Some(Err(self.err(self.line, format!("bad zone name: {e}")))),
                };
                let previous = self.next.replace((apex, self.line));
                if let Some((apex, at)) = previous {
                    return Some(Ok(Section {
                        apex,
                        file: self.path.clone(),
                        line_offset: at,
                        text,
                    }));
                }
                continue;
            }
            if self.next.is_none() {
                let t = line.trim();
                if !t.is_empty() && !t.starts_with(';') {
                    return Some(Err(self.err(
                        self.line,
                        "a multi-zone file must start with a $ZONE line".into(),
                    )));
                }
                continue;
            }
            text.push_str(&line);
            text.push('\n');
            if text.len() > MAX_SECTION_BYTES {
                self.done = true;
                return Some(Err(self.err(
                    self.line,
                    format!("zone larger than {MAX_SECTION_BYTES} bytes: import it from a file of its own"),
                )));
            }
        }
        self.next.take().map(|(apex, at)| {
            Ok(Section {
                apex,
                file: self.path.clone(),
                line_offset: at,
                text,
            })
        })
    }
}

/// What a multi-zone import did.
#[derive(Clone, Debug)]
pub struct MultiSummary {
    /// Zones read.
    pub zones: u64,
    /// Records read.
    pub records: u64,
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
    let (zones, total) = {
        let source = source.clone();
        tokio::task::spawn_blocking(move || -> Result<(u64, u64), ImportError> {
            let mut zones = 0;
            let mut records = 0;
            for section in sections(&source)? {
                let section = section?;
                records += validate_records(
                    section.reader(),
                    &section.file,
                    &section.apex,
                    true,
                    section.line_offset,
                )?;
                zones += 1;
            }
            Ok((zones, records))
        })
        .await
        .map_err(|e| ImportError::Zone(format!("validation thread failed: {e}")))??
    };
    progress.phase(IMPORT_PHASE, total);
    let source_path = match source {
        ZoneSource::MultiFile(p) | ZoneSource::Directory(p) => p.clone(),
    };
    let key = tuning.resumable.then(|| input_key(&source_path));
    let skip = match &key {
        Some(k) => store.import_checkpoint(k).await?,
        None => 0,
    };
    let mode = if options.replace {
        WriteMode::Replace
    } else {
        WriteMode::Merge
    };
    let (tx, rx) = mpsc::channel(options.in_flight.max(1) * 2);
    let batch_size = options.batch_size.max(1);
    let reader_key = key.clone();
    let reader_source = source.clone();
    let thread = std::thread::spawn(move || -> Result<u64, ImportError> {
        let mut batch: Vec<ZoneContent> = Vec::new();
        let mut nodes = 0usize;
        let mut records = 0u64;
        let mut no = 0u64;
        let mut skipped_records = 0u64;
        let mut last_end = skip;
        for (index, section) in sections(&reader_source)?.enumerate() {
            let section = section?;
            let index = index as u64;
            last_end = index + 1;
            if index < skip {
                skipped_records += section.reader().count() as u64;
                continue;
            }
            let mut builder = NodeBuilder::new(section.apex.clone(), 0);
            let mut zone_nodes = Vec::new();
            for record in section.reader() {
                builder.add(record?, &mut zone_nodes);
            }
            builder.finish(&mut zone_nodes);
            records += builder.consumed;
            nodes += zone_nodes.len();
            batch.push(ZoneContent {
                apex: section.apex,
                nodes: zone_nodes,
                resume_key: reader_key.as_ref().map(|k| format!("{k}#{index}")),
            });
            if nodes >= batch_size {
                let job = Job {
                    no,
                    records: std::mem::take(&mut records),
                    end: index + 1,
                    payload: Payload::Zones(std::mem::take(&mut batch)),
                };
                no += 1;
                nodes = 0;
                if tx.blocking_send(job).is_err() {
                    return Ok(skipped_records);
                }
            }
        }
        if !batch.is_empty() {
            let job = Job {
                no,
                records,
                end: last_end,
                payload: Payload::Zones(batch),
            };
            let _ = tx.blocking_send(job);
        }
        Ok(skipped_records)
    });
    let target = Target::Zones {
        store: store.clone(),
        mode,
        grace: options.grace,
    };
    let checkpoint = match &key {
        Some(k) => Checkpoint::Meta(store, k),
        None => Checkpoint::None,
    };
    let result = run_jobs(
        rx,
        target,
        options.in_flight,
        tuning,
        checkpoint,
        None,
        progress,
        0,
    )
    .await;
    let skipped_records = thread
        .join()
        .map_err(|_| ImportError::Zone("reader thread panicked".into()))?;
    let (stats, _) = result?;
    let _ = skipped_records?;
    if let Some(k) = &key {
        store.set_import_checkpoint(k, None).await?;
    }
    Ok(MultiSummary {
        zones,
        records: total,
        zones_resumed: skip,
        writes: stats,
        elapsed: started.elapsed(),
    })
}

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
        BaselineInput::Zones(source) => std::thread::spawn(move || -> Result<(), ImportError> {
            let mut batch = Vec::with_capacity(batch_size + 16);
            let mut records = 0;
            let mut no = 0;
            for section in sections(&source)? {
                let section = section?;
                let mut builder = NodeBuilder::new(section.apex.clone(), 0);
                for record in section.reader() {
                    builder.add(record?, &mut batch);
                    records += 1;
                }
                builder.finish(&mut batch);
                if batch.len() >= batch_size {
                    let job = Job {
                        no,
                        records: std::mem::take(&mut records),
                        end: 0,
                        payload: Payload::Nodes(std::mem::take(&mut batch)),
                    };
                    no += 1;
                    if tx.blocking_send(job).is_err() {
                        return Ok(());
                    }
                }
            }
            let _ = tx.blocking_send(Job {
                no,
                records,
                end: 0,
                payload: Payload::Nodes(batch),
            });
            Ok(())
        }),
    };
    let started = Instant::now();
    let result = run_jobs(
        rx,
        Target::Baseline(writer.clone()),
        options.in_flight,
        &ImportTuning::default(),
        Checkpoint::None,
        None,
        progress,
        0,
    )
    .await;
    let elapsed = started.elapsed();
    let read = thread
        .join()
        .map_err(|_| ImportError::Zone("reader thread panicked".into()))?;
    let (stats, records) = result?;
    read?;
    if let Ok(w) = Arc::try_unwrap(writer) {
        w.drop_collection().await?;
    }
    Ok(BaselineSummary {
        records,
        documents: stats.inserted,
        elapsed,
    })
}

/// The input of a baseline run.
pub enum BaselineInput {
    /// One zone file.
    File(PathBuf),
    /// Many zones.
    Zones(ZoneSource),
}
