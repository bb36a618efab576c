//! Reader threads: the input read, grouped into nodes and cut into jobs,
//! off the async runtime.
//!
//! ```text
//!  zone file ─► spawn_node_reader: skip, NodeBuilder, batches of nodes ─► Job
//!  sections  ─► spawn_zones_reader: skip zones, whole zones a batch     ─► Job
//!  sections  ─► spawn_sections_node_reader (--baseline): nodes only     ─► Job
//!  join_reader: the thread's error, after the writers' result
//! ```

use super::jobs::{Job, Payload};
use super::nodes::NodeBuilder;
use super::sections::{sections, ZoneSource};
use super::ImportError;
use backend_mongo::{NodeWrite, ZoneContent};
use dns::presentation::ZoneFileReader;
use dns::Name;
use std::thread::JoinHandle;
use tokio::sync::mpsc;

/// Numbers the jobs and sends them; false once the writers are gone.
struct JobSender {
    tx: mpsc::Sender<Job>,
    no: u64,
}

impl JobSender {
    fn new(tx: mpsc::Sender<Job>) -> Self {
        JobSender { tx, no: 0 }
    }

    fn send(&mut self, records: u64, end: u64, payload: Payload) -> bool {
        let job = Job {
            no: self.no,
            records,
            end,
            payload,
        };
        self.no += 1;
        self.tx.blocking_send(job).is_ok()
    }
}

/// Reads a zone file on a thread: skips `skip` records, groups the rest
/// into node batches and sends them as jobs.
pub(super) fn spawn_node_reader(
    reader: ZoneFileReader,
    zone: Name,
    skip: u64,
    batch_size: usize,
    tx: mpsc::Sender<Job>,
) -> JoinHandle<Result<(), ImportError>> {
    std::thread::spawn(move || {
        let mut builder = NodeBuilder::new(zone, skip);
        let mut batch: Vec<NodeWrite> = Vec::with_capacity(batch_size + 16);
        let mut batch_records = 0u64;
        let mut sender = JobSender::new(tx);
        for (seen, record) in reader.enumerate() {
            let record = record?;
            if (seen as u64) < skip {
                continue;
            }
            builder.add(record, &mut batch);
            batch_records += 1;
            if batch.len() >= batch_size {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_size + 16));
                let records = std::mem::take(&mut batch_records);
                if !sender.send(records, builder.complete, Payload::Nodes(full)) {
                    return Ok(());
                }
            }
        }
        builder.finish(&mut batch);
        if !batch.is_empty() || batch_records > 0 {
            sender.send(batch_records, builder.complete, Payload::Nodes(batch));
        }
        Ok(())
    })
}

/// Reads the zones of `source` on a thread: skips the first `skip` zones
/// (stored by a killed run), then sends whole zones in jobs of about
/// `batch_size` nodes. A job's resume position is the zones read so far;
/// with a resume `key`, each zone carries its own key. Returns the
/// records of the zones skipped.
pub(super) fn spawn_zones_reader(
    source: ZoneSource,
    skip: u64,
    key: Option<String>,
    batch_size: usize,
    tx: mpsc::Sender<Job>,
) -> JoinHandle<Result<u64, ImportError>> {
    std::thread::spawn(move || {
        let mut batch: Vec<ZoneContent> = Vec::new();
        let (mut nodes, mut records, mut skipped_records) = (0usize, 0u64, 0u64);
        let mut last_end = skip;
        let mut sender = JobSender::new(tx);
        for (index, section) in sections(&source)?.enumerate() {
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
                resume_key: key.as_ref().map(|k| format!("{k}#{index}")),
            });
            if nodes >= batch_size {
                nodes = 0;
                let zones = Payload::Zones(std::mem::take(&mut batch));
                if !sender.send(std::mem::take(&mut records), index + 1, zones) {
                    return Ok(skipped_records);
                }
            }
        }
        if !batch.is_empty() {
            sender.send(records, last_end, Payload::Zones(batch));
        }
        Ok(skipped_records)
    })
}

/// Reads the zones of `source` on a thread as nodes only, in batches of
/// about `batch_size` (`--baseline`: no zone documents, no resume).
pub(super) fn spawn_sections_node_reader(
    source: ZoneSource,
    batch_size: usize,
    tx: mpsc::Sender<Job>,
) -> JoinHandle<Result<(), ImportError>> {
    std::thread::spawn(move || {
        let mut batch = Vec::with_capacity(batch_size + 16);
        let mut records = 0;
        let mut sender = JobSender::new(tx);
        for section in sections(&source)? {
            let section = section?;
            let mut builder = NodeBuilder::new(section.apex.clone(), 0);
            for record in section.reader() {
                builder.add(record?, &mut batch);
                records += 1;
            }
            builder.finish(&mut batch);
            if batch.len() >= batch_size {
                let nodes = Payload::Nodes(std::mem::take(&mut batch));
                if !sender.send(std::mem::take(&mut records), 0, nodes) {
                    return Ok(());
                }
            }
        }
        sender.send(records, 0, Payload::Nodes(batch));
        Ok(())
    })
}

/// Joins a reader thread after the writers finished with `written`: the
/// writers' error first, then the reader's.
pub(super) fn join_reader<T, R>(
    thread: JoinHandle<Result<R, ImportError>>,
    written: Result<T, ImportError>,
) -> Result<(T, R), ImportError> {
    let read = thread
        .join()
        .map_err(|_| ImportError::Zone("reader thread panicked".into()))?;
    Ok((written?, read?))
}
