//! The writers' side of an import: jobs run with a bounded number in
//! flight, paced, checkpointed and published as they finish.
//!
//! ```text
//!  Job (from a reader thread) ─► pace (--rate) ─► a task: Target::write
//!  done ─► the contiguous prefix of jobs done ─► resume position
//!  ─► publish every --publish-every (merges) ─► checkpoint every 0.5 s
//! ```

use super::{ImportError, ImportTuning, Progress};
use backend_mongo::{
    BaselineWriter, NodeWrite, Store, StoreError, WriteMode, WriteStats, ZoneContent, ZoneWriter,
};
use futures::stream::{FuturesUnordered, StreamExt};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One unit of work for the writers.
pub(super) struct Job {
    /// Position in the input (0, 1, 2, …).
    pub(super) no: u64,
    /// Records in this job (for progress and rate).
    pub(super) records: u64,
    /// Resume position once this job and all before it are stored.
    pub(super) end: u64,
    pub(super) payload: Payload,
}

/// What a job writes.
pub(super) enum Payload {
    /// Nodes of the one zone being imported.
    Nodes(Vec<NodeWrite>),
    /// Whole zones of a multi-zone import.
    Zones(Vec<ZoneContent>),
}

/// Where jobs go.
#[derive(Clone)]
pub(super) enum Target {
    /// One zone's writer.
    Zone(Arc<ZoneWriter>),
    /// Many zones, each written whole.
    Zones {
        store: Store,
        mode: WriteMode,
        grace: Duration,
    },
    /// The `--baseline` scratch collection.
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
pub(super) enum Checkpoint<'a> {
    /// Nothing: the import is not resumable.
    None,
    /// In the zone document, by its writer.
    Zone(&'a ZoneWriter),
    /// In the import metadata, under this key (multi-zone imports).
    Meta(&'a Store, &'a str),
}

impl Checkpoint<'_> {
    async fn save(&self, at: u64) -> Result<(), StoreError> {
        match self {
            Checkpoint::None => Ok(()),
            Checkpoint::Zone(w) => w.checkpoint(at).await,
            Checkpoint::Meta(store, key) => store.set_import_checkpoint(key, Some(at)).await,
        }
    }
}

const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

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

/// Adds `more` to `total`.
pub(super) fn add_stats(total: &mut WriteStats, more: &WriteStats) {
    total.inserted += more.inserted;
    total.merged += more.merged;
}

/// Runs jobs: up to `in_flight` at once, paced by the tuning's rate,
/// keeping the checkpoint and publishing as asked.
pub(super) struct JobRunner<'a> {
    /// Where the jobs are written.
    pub(super) target: Target,
    /// Jobs in flight at once.
    pub(super) in_flight: usize,
    /// Rate and publishing.
    pub(super) tuning: &'a ImportTuning,
    /// Where the resume position is kept.
    pub(super) checkpoint: Checkpoint<'a>,
    /// A merge's writer, published every `tuning.publish_every`.
    pub(super) publisher: Option<&'a ZoneWriter>,
    /// Told the records written so far.
    pub(super) progress: &'a dyn Progress,
}

/// The result of one job's task: (no, records, end, what the write did).
type Done = Result<(u64, u64, u64, Result<WriteStats, StoreError>), tokio::task::JoinError>;

/// Where a run of jobs is.
struct RunState {
    started: Instant,
    stats: WriteStats,
    /// Records handed to writers (for the rate).
    dispatched: u64,
    /// Records written.
    written: u64,
    /// Jobs done, by number, with their resume positions.
    done_ends: BTreeMap<u64, u64>,
    /// The first job not yet done.
    next_no: u64,
    /// Every job before `next_no` is stored: the input up to here.
    resume_at: Option<u64>,
    /// The resume position as of the last publish.
    acknowledged_at: Option<u64>,
    saved_at: Option<u64>,
    last_save: Instant,
    last_publish: Instant,
}

impl RunState {
    fn new(records_before: u64) -> Self {
        RunState {
            started: Instant::now(),
            stats: WriteStats::default(),
            dispatched: 0,
            written: records_before,
            done_ends: BTreeMap::new(),
            next_no: 0,
            resume_at: None,
            acknowledged_at: None,
            saved_at: None,
            last_save: Instant::now(),
            last_publish: Instant::now(),
        }
    }

    /// Counts a finished job; a failed write or task is the run's error.
    fn finished(&mut self, done: Done) -> Result<(), ImportError> {
        let (no, records, end, result) =
            done.map_err(|e| ImportError::Zone(format!("writer task failed: {e}")))?;
        add_stats(&mut self.stats, &result?);
        self.written += records;
        self.done_ends.insert(no, end);
        Ok(())
    }

    /// Moves the resume position over the jobs now done in order.
    fn advance(&mut self) {
        while let Some(end) = self.done_ends.remove(&self.next_no) {
            self.next_no += 1;
            self.resume_at = Some(end);
        }
    }
}

enum Event {
    Job(Option<Job>),
    Done(Option<Done>),
}

impl JobRunner<'_> {
    /// Runs every job `jobs` brings; `records_before` were written by an
    /// earlier part of the import. Returns the stats and the records written.
    pub(super) async fn run(
        self,
        mut jobs: mpsc::Receiver<Job>,
        records_before: u64,
    ) -> Result<(WriteStats, u64), ImportError> {
        let mut state = RunState::new(records_before);
        let mut pending = FuturesUnordered::new();
        let mut input_open = true;
        loop {
            let event = if input_open && pending.len() < self.in_flight.max(1) {
                tokio::select! {
                    job = jobs.recv() => Event::Job(job),
                    done = pending.next(), if !pending.is_empty() => Event::Done(done),
                }
            } else if !pending.is_empty() {
                Event::Done(pending.next().await)
            } else {
                break;
            };
            match event {
                Event::Job(Some(job)) => pending.push(self.dispatch(&mut state, job).await),
                Event::Job(None) => input_open = false,
                Event::Done(Some(done)) => state.finished(done)?,
                Event::Done(None) => {}
            }
            state.advance();
            self.progress.set(state.written);
            self.publish_if_due(&mut state).await?;
            self.save_if_due(&mut state).await?;
        }
        Ok((state.stats, state.written))
    }

    /// Waits for the job's turn under the rate, then starts its write.
    async fn dispatch(
        &self,
        state: &mut RunState,
        job: Job,
    ) -> JoinHandle<(u64, u64, u64, Result<WriteStats, StoreError>)> {
        if let Some(rate) = self.tuning.rate {
            let due = state.started + Duration::from_secs_f64(state.dispatched as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
        state.dispatched += job.records;
        let target = self.target.clone();
        let (no, records, end) = (job.no, job.records, job.end);
        tokio::spawn(async move { (no, records, end, target.write(job.payload).await) })
    }

    /// A merge publishes what it has written every `publish_every`.
    async fn publish_if_due(&self, state: &mut RunState) -> Result<(), ImportError> {
        let (Some(every), Some(writer)) = (self.tuning.publish_every, self.publisher) else {
            return Ok(());
        };
        if state.last_publish.elapsed() >= every {
            let at = state.resume_at;
            writer.publish().await?;
            state.acknowledged_at = at;
            state.last_publish = Instant::now();
        }
        Ok(())
    }

    /// Saves the resume position every [`CHECKPOINT_EVERY`] when it moved.
    ///
    /// A merge's position only covers acknowledged batches: a re-run skips
    /// them, and a batch written but not acknowledged by a killed run is in
    /// no change record, so a signer switching the zone meanwhile would not
    /// carry it (the re-run writes it again).
    async fn save_if_due(&self, state: &mut RunState) -> Result<(), ImportError> {
        let safe = if self.publisher.is_some() {
            state.acknowledged_at
        } else {
            state.resume_at
        };
        if state.last_save.elapsed() >= CHECKPOINT_EVERY && safe != state.saved_at {
            if let Some(at) = safe {
                self.checkpoint.save(at).await?;
                state.saved_at = safe;
            }
            state.last_save = Instant::now();
        }
        Ok(())
    }
}
