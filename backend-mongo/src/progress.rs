//! Progress of long jobs (imports, signing), written to the `progress`
//! collection so every server can show it on `/metrics`.
//!
//! ```text
//!  importer / signer ── ProgressReporter: set_total, set_done (set_phase:
//!      the signer's steps) ──► every second:
//!      progress.replaceOne({_id: "import:example.com."}, {...}, upsert)
//!  server /metrics ── list_progress() ──► mongodns_job_* gauges
//! ```
//!
//! One document per job kind and zone, overwritten by the next run, so the
//! collection never grows beyond (kinds × zones). See `docs/schema.md`.

use crate::{Store, StoreError};
use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The collection's name.
pub const PROGRESS: &str = "progress";

/// One job's last reported state.
#[derive(Clone, Debug, PartialEq)]
pub struct JobProgress {
    /// `KIND:ZONE`.
    pub id: String,
    /// `import`, `sign`, …
    pub kind: String,
    /// The zone's apex.
    pub zone: String,
    /// `running`, `done` or `failed`.
    pub state: String,
    /// Units (records, RRsets) done so far.
    pub done: u64,
    /// Units in the whole job (0 while unknown).
    pub total: u64,
    /// Host the job runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// When it started (ms since the epoch).
    pub started_ms: i64,
    /// When it last reported (ms since the epoch).
    pub updated_ms: i64,
}

fn to_doc(p: &JobProgress) -> Document {
    doc! {
        "_id": &p.id,
        "kind": &p.kind,
        "zone": &p.zone,
        "state": &p.state,
        "done": p.done as i64,
        "total": p.total as i64,
        "host": &p.host,
        "pid": i64::from(p.pid),
        "started": DateTime::from_millis(p.started_ms),
        "updated": DateTime::from_millis(p.updated_ms),
    }
}

fn from_doc(d: &Document) -> Option<JobProgress> {
    let int = |k: &str| {
        d.get_i64(k)
            .ok()
            .or_else(|| d.get_i32(k).ok().map(i64::from))
    };
    Some(JobProgress {
        id: d.get_str("_id").ok()?.to_string(),
        kind: d.get_str("kind").ok()?.to_string(),
        zone: d.get_str("zone").unwrap_or("").to_string(),
        state: d.get_str("state").unwrap_or("running").to_string(),
        done: int("done").unwrap_or(0).max(0) as u64,
        total: int("total").unwrap_or(0).max(0) as u64,
        host: d.get_str("host").unwrap_or("").to_string(),
        pid: int("pid").unwrap_or(0).max(0) as u32,
        started_ms: d
            .get_datetime("started")
            .map_or(0, |t| t.timestamp_millis()),
        updated_ms: d
            .get_datetime("updated")
            .map_or(0, |t| t.timestamp_millis()),
    })
}

impl Store {
    /// Writes (upserts) one job's progress.
    pub async fn put_progress(&self, p: &JobProgress) -> Result<(), StoreError> {
        self.put_progress_doc(to_doc(p)).await
    }

    async fn put_progress_doc(&self, d: Document) -> Result<(), StoreError> {
        let id = d.get_str("_id").unwrap_or_default().to_string();
        self.db
            .collection::<Document>(PROGRESS)
            .replace_one(doc! {"_id": id}, d)
            .upsert(true)
            .await?;
        Ok(())
    }

    /// The `phase` of job `id` (`KIND:ZONE`), for jobs made of steps.
    pub async fn progress_phase(&self, id: &str) -> Result<Option<String>, StoreError> {
        let d = self
            .db
            .collection::<Document>(PROGRESS)
            .find_one(doc! {"_id": id})
            .await?;
        Ok(d.and_then(|d| d.get_str("phase").ok().map(str::to_string)))
    }

    /// Every job's last reported progress.
    pub async fn list_progress(&self) -> Result<Vec<JobProgress>, StoreError> {
        let docs: Vec<Document> = self
            .db
            .collection::<Document>(PROGRESS)
            .find(doc! {})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(from_doc).collect())
    }
}

/// How long `finish` waits for a periodic write under way.
const FINISH_WAIT: Duration = Duration::from_secs(5);

fn now_ms() -> i64 {
    DateTime::now().timestamp_millis()
}

/// The document of `p`, with `phase` when the job has phases.
fn to_doc_with_phase(p: &JobProgress, phase: &str) -> Document {
    let mut d = to_doc(p);
    if !phase.is_empty() {
        d.insert("phase", phase);
    }
    d
}

/// Reports a job's progress every `every` until finished. Counting is two
/// relaxed atomics; the writes happen in a task of their own, and a failed
/// write is only logged (progress reporting never fails the job).
///
/// A job made of steps (the signer: `reading`, `signing`, `writing`,
/// `switching`, `cleanup`) names the current one with
/// [`ProgressReporter::set_phase`]; `done` and `total` then count that
/// step, and the document carries it as `phase`.
pub struct ProgressReporter {
    done: Arc<AtomicU64>,
    total: Arc<AtomicU64>,
    phase: Arc<std::sync::Mutex<String>>,
    store: Store,
    base: JobProgress,
    task: tokio::task::JoinHandle<()>,
    /// Tells the task to stop between writes (never in the middle of one).
    stop: Arc<tokio::sync::Notify>,
}

impl ProgressReporter {
    /// Starts reporting job `kind` on `zone` (state `running`).
    pub fn start(store: Store, kind: &str, zone: &str, every: Duration) -> ProgressReporter {
        let started = now_ms();
        let base = JobProgress {
            id: format!("{kind}:{zone}"),
            kind: kind.to_string(),
            zone: zone.to_string(),
            state: "running".into(),
            done: 0,
            total: 0,
            host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            pid: std::process::id(),
            started_ms: started,
            updated_ms: started,
        };
        let done = Arc::new(AtomicU64::new(0));
        let total = Arc::new(AtomicU64::new(0));
        let phase = Arc::new(std::sync::Mutex::new(String::new()));
        let stop = Arc::new(tokio::sync::Notify::new());
        let task = {
            let (store, base, done, total, phase, stop) = (
                store.clone(),
                base.clone(),
                done.clone(),
                total.clone(),
                phase.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(every);
                loop {
                    tokio::select! {
                        _ = tick.tick() => {}
                        _ = stop.notified() => return,
                    }
                    let mut p = base.clone();
                    p.done = done.load(Ordering::Relaxed);
                    p.total = total.load(Ordering::Relaxed);
                    p.updated_ms = now_ms();
                    let phase = phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
                    if let Err(e) = store.put_progress_doc(to_doc_with_phase(&p, &phase)).await {
                        tracing::debug!(error = %e, "cannot write progress");
                    }
                }
            })
        };
        ProgressReporter {
            done,
            total,
            phase,
            store,
            base,
            task,
            stop,
        }
    }

    /// Starts step `name` of the job, of `total` units (0: unknown); `done`
    /// goes back to 0.
    pub fn set_phase(&self, name: &str, total: u64) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        self.total.store(total, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
    }

    /// Sets the job's size.
    pub fn set_total(&self, n: u64) {
        self.total.store(n, Ordering::Relaxed);
    }

    /// Sets how much is done.
    pub fn set_done(&self, n: u64) {
        self.done.store(n, Ordering::Relaxed);
    }

    /// Adds to how much is done.
    pub fn add_done(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Stops the periodic writes and records the final state (`done` or
    /// `failed`). A periodic write under way is waited for first (up to
    /// [`FINISH_WAIT`]): aborted, it could still reach the database after
    /// the final state and leave the job `running`.
    pub async fn finish(mut self, ok: bool) {
        self.stop.notify_one();
        if tokio::time::timeout(FINISH_WAIT, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
        let mut p = self.base.clone();
        p.done = self.done.load(Ordering::Relaxed);
        p.total = self.total.load(Ordering::Relaxed);
        p.state = if ok { "done" } else { "failed" }.into();
        p.updated_ms = now_ms();
        let phase = self.phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Err(e) = self
            .store
            .put_progress_doc(to_doc_with_phase(&p, &phase))
            .await
        {
            tracing::debug!(error = %e, "cannot write final progress");
        }
    }
}
