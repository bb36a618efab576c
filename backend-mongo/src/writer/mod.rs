//! Writing a zone: the only way mongodns tools change stored data.
//!
//! ```text
//!  begin(zone, Replace) ─► [zone lock] pending_ver = ver+1 (a killed run's
//!        │   pending version is listed in old_vers, a higher number taken)
//!        │   write_nodes(batch) … (insert; duplicates merged by update)
//!        ▼
//!  switch() ─► [zone lock] pending_ver still ours? ─► serial from the zone
//!        │     document as it is now, moved forward ─► seq += 1 ─►
//!        │     zones{ver, serial, gen, old_vers += served ver}   (readers switch here)
//!        └─► collect_old_versions(): after a grace period, mark `deleting`,
//!            delete the nodes (batched, restartable), unlist
//!
//!  begin(zone, Merge) ─► write_nodes(batch): write into the served ver ─►
//!        settle: [zone lock] still the served ver? ─ yes ─► change record,
//!                │                                        gen = seq (acknowledged)
//!                └ no (a switch happened) ─► write the batch again into
//!                  the version now served ─► settle again
//!        finish(): [zone lock] serial + 1, gen = seq
//!
//!  Store::delete_zone ─► [zone lock] tombstone (deleted, last_ver, gen)
//!        ─► nodes deleted after the grace                     (delete.rs)
//!  Store::edit_zone(edits) ─► [zone lock] read, edit, write the names,
//!        serial + 1, change record, gen = seq   (single records: edit.rs,
//!        its writes: edit_writes.rs)
//!  Store::set_zone_notify ─► [zone lock] zone_settings{_id}, change record
//!        with no names, gen = seq                             (settings.rs)
//!  signers: Store::apply_changes / insert_full_nodes ─► signed nodes
//!        (signed_nodes.rs) ─► Store::publish_in_place ─► [zone lock] still
//!        the served ver? serial, change record, gen = seq (publish_in_place.rs)
//! ```
//!
//! Every write of a zone document happens under the zone lock
//! ([`crate::lock::ZONE_LOCK`]), so each one sees the document as it is;
//! the concurrency model is written down in `docs/schema.md`
//! ("Concurrency"). Every writer ends by bumping the zone's `gen` to a new
//! value of the global counter `meta.seq`, which is how servers notice
//! changes.

mod baseline;
mod bulk;
mod collect;
mod delete;
mod edit;
mod edit_writes;
mod journal;
mod journal_read;
mod merge_journal;
mod meta;
mod node_images;
mod publish;
mod publish_in_place;
mod replace_diff;
mod settings;
mod signed_nodes;
mod zones;

pub use crate::serial::{serial_gt, soa_serial};
pub use baseline::{BaselineWriter, BASELINE_COLLECTION};
pub use bulk::{MAX_UPDATES_PER_COMMAND, MONGODB_UPDATES_PER_COMMAND};
pub use collect::{Collected, DELETING, OLD_VERSIONS};
pub use delete::DeletedZone;
pub use edit::{EditSummary, ZoneEdit};
pub use journal::{JOURNAL, JOURNAL_KEPT, JOURNAL_MAX_AGE, MAX_JOURNAL_RECORDS, SERIAL_GEN};
pub use journal_read::{JournalStream, JOURNAL_BATCH};
pub use merge_journal::MERGE_LEASE;
pub use node_images::{node_records, NodeImages, MAX_IMAGED_NODES};
pub use replace_diff::REPLACE_DIFF_WAIT;
pub use settings::{ZoneSettings, ZONE_SETTINGS};
pub use zones::ZoneContent;

use crate::lock::ZONE_LOCK;
use crate::schema::{self, int_field, RRset, ZoneInfo};
use crate::store::{Store, StoreError};
use crate::Name;
use bulk::{insert_nodes, merge_update};
use merge_journal::MergeJournal;
use mongodb::bson::{doc, DateTime, Document};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How a write treats what the zone already holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Build a new version; on `finish` it replaces the old one atomically.
    Replace,
    /// Add records to the served version (RRsets are merged, TTLs set).
    Merge,
}

/// One owner name and its RRsets, ready to be written.
#[derive(Clone, Debug)]
pub struct NodeWrite {
    /// The owner name.
    pub name: Name,
    /// Its RRsets; empty for an empty non-terminal.
    pub rrsets: Vec<RRset>,
}

/// Counts from one bulk write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Documents newly inserted.
    pub inserted: u64,
    /// Documents merged into ones that already existed.
    pub merged: u64,
}

/// What [`ZoneWriter::switch`] did.
#[derive(Clone, Debug)]
pub struct Switched {
    /// The zone as now served.
    pub zone: ZoneInfo,
    /// The version it replaced, now waiting to be deleted.
    pub old: Option<i64>,
}

/// How long change records are kept: servers read them within a poll
/// interval; one that falls further behind drops whole zones instead.
pub const CHANGE_RECORDS_KEPT: Duration = Duration::from_secs(600);

/// Longest wait for the zone lock: another writer holds it for
/// milliseconds, a signer's final catch-up for at most a few seconds.
pub const LOCK_WAIT: Duration = Duration::from_secs(120);

/// A write in progress on one zone.
pub struct ZoneWriter {
    store: Store,
    zone: Name,
    /// The version written into: fixed for `Replace`; for `Merge`, the
    /// served version, followed when another writer switches it.
    ver: AtomicI64,
    mode: WriteMode,
    previous: Option<ZoneInfo>,
    /// Merge updates run one batch at a time: FerretDB applies an update as
    /// read-modify-write without isolation, so two concurrent `$addToSet`s on
    /// one document can lose one. Inserts need no lock (the unique `_id`
    /// index arbitrates), and contiguous zone files rarely merge at all.
    merge_lock: tokio::sync::Mutex<()>,
    /// Identity of the input, for resuming a killed write (see `resume`).
    resume_key: Option<String>,
    /// `Merge`: batches written but not yet acknowledged, with the version
    /// each went into (see `settle`).
    unsettled: Mutex<Vec<(i64, Vec<NodeWrite>)>>,
    /// One settle at a time per writer (later ones find their batches
    /// acknowledged by an earlier one).
    settle_lock: tokio::sync::Mutex<()>,
    /// `Merge`: names written since the last publish, for the change
    /// record; `None` once anything unlisted may have changed.
    changed: Mutex<Option<Vec<Name>>>,
    /// The caller signs what it writes (see [`ZoneWriter::note_signed`]).
    signed: AtomicBool,
    /// `Merge`: the zone's generation when this writer last found the zone
    /// switched to a new version under it.
    moved_gen: Mutex<Option<i64>>,
    /// `Merge` into an unsigned zone: what was removed and added since the
    /// serial last moved, for the IXFR journal (merge_journal.rs).
    journal: Mutex<Option<MergeJournal>>,
    /// Its listing in the zone document's `merging`.
    merge_id: Option<String>,
    /// `Merge` into a secured zone: the signer's before-images of what it
    /// wrote, for the journal ([`ZoneWriter::keep_signed_images`]).
    images: Mutex<Option<NodeImages>>,
}

/// The `resume` field of a zone document: `{key, ver, done}`, when it
/// matches `key` and `ver`.
pub(crate) fn resume_done(zone_doc: Option<&Document>, key: Option<&str>, ver: i64) -> Option<u64> {
    let key = key?;
    let r = zone_doc?.get_document("resume").ok()?;
    let rver = int_field(r, "ver")?;
    let done = int_field(r, "done")?;
    (r.get_str("key").ok()? == key && rver == ver).then_some(done.max(0) as u64)
}

/// The first version number of a zone created anew: above every version
/// a deleted zone of that name listed (1 for a name never used).
fn after_deleted(zone_doc: Option<&Document>) -> i64 {
    let last = zone_doc.and_then(|d| int_field(d, crate::schema::LAST_VER));
    let old = collect::old_versions(zone_doc).into_iter().max();
    last.into_iter().chain(old).max().map_or(1, |v| v + 1)
}

impl ZoneWriter {
    fn new(
        store: &Store,
        zone: &Name,
        ver: i64,
        mode: WriteMode,
        previous: Option<ZoneInfo>,
        key: Option<&str>,
        changed: Option<Vec<Name>>,
    ) -> ZoneWriter {
        ZoneWriter {
            store: store.clone(),
            zone: zone.clone(),
            ver: AtomicI64::new(ver),
            mode,
            previous,
            merge_lock: Default::default(),
            resume_key: key.map(str::to_string),
            unsettled: Mutex::new(Vec::new()),
            settle_lock: Default::default(),
            changed: Mutex::new(changed),
            signed: AtomicBool::new(false),
            moved_gen: Mutex::new(None),
            journal: Mutex::new(None),
            merge_id: None,
            images: Mutex::new(None),
        }
    }

    /// A signed merge into a secured zone: `images` holds the before-image
    /// of every node its signer wrote (records, chain, the apex SOA); the
    /// publish that moves the serial journals their difference. `None`
    /// (the signer changed version, or gave up its lease): not journaled.
    pub fn keep_signed_images(&self, images: Option<NodeImages>) {
        *self.images.lock().unwrap_or_else(|p| p.into_inner()) = images;
    }

    /// Runs `f` on the merge journal, when this writer keeps one.
    fn with_journal<T>(&self, f: impl FnOnce(&mut MergeJournal) -> T) -> Option<T> {
        let mut j = self.journal.lock().unwrap_or_else(|p| p.into_inner());
        j.as_mut().map(f)
    }
}

impl Store {
    /// Starts writing `zone`. `Merge` needs the zone to exist already, or
    /// falls back to `Replace` (a new zone has nothing to merge into).
    pub async fn begin_zone_write(
        &self,
        zone: &Name,
        mode: WriteMode,
    ) -> Result<ZoneWriter, StoreError> {
        Ok(self.begin_resumable_write(zone, mode, None).await?.0)
    }

    /// Like [`Store::begin_zone_write`], for an input identified by `key`
    /// (e.g. a file's path, size and modification time). Returns the writer
    /// and how many records of the input a killed write with the same key
    /// had already stored: the caller skips them and writes the rest.
    ///
    /// * `Replace`: a `pending_ver` whose `resume.key` is `key` is reused
    ///   *without* deleting its nodes (they are exactly a prefix of the same
    ///   input; writing them again merges, changing nothing). Any other
    ///   `pending_ver` is listed in `old_vers` and a higher number taken: the
    ///   writer that left it can no longer switch.
    /// * `Merge`: writes go to the served version anyway; the count lets a
    ///   re-run skip the records already merged (re-merging them would
    ///   change nothing either).
    ///
    /// The count only moves forward through [`ZoneWriter::checkpoint`], and
    /// `finish` removes it. The zone document is read and written under
    /// the zone lock.
    pub async fn begin_resumable_write(
        &self,
        zone: &Name,
        mode: WriteMode,
        key: Option<&str>,
    ) -> Result<(ZoneWriter, u64), StoreError> {
        let lock = self.lock(ZONE_LOCK, zone, "begin", LOCK_WAIT).await?;
        let begun = self.begin_locked(zone, mode, key).await;
        lock.release_with(begun).await
    }

    async fn begin_locked(
        &self,
        zone: &Name,
        mode: WriteMode,
        key: Option<&str>,
    ) -> Result<(ZoneWriter, u64), StoreError> {
        let id = zone.to_string();
        let current = self.zones.find_one(doc! {"_id": &id}).await?;
        let served = match &current {
            Some(d) if d.contains_key("ver") => Some(schema::zone_from_doc(d)?),
            _ => None,
        };
        if let (WriteMode::Merge, Some(info)) = (mode, &served) {
            let done = resume_done(current.as_ref(), key, info.ver).unwrap_or(0);
            if let Some(key) = key {
                self.zones
                    .update_one(
                        doc! {"_id": &id},
                        doc! {"$set": {"resume": {"key": key, "ver": info.ver, "done": done as i64}}},
                    )
                    .await?;
            }
            // A resumed merge skips only records a killed run wrote *and*
            // acknowledged (the importer checkpoints nothing else): their
            // names are in change records already.
            let changed = Some(Vec::new());
            let mut writer =
                ZoneWriter::new(self, zone, info.ver, mode, served.clone(), key, changed);
            let secured = publish::is_secured(&current);
            self.begin_merge_journal(&mut writer, current.as_ref(), info, secured)
                .await?;
            return Ok((writer, done));
        }
        let pending = current.as_ref().and_then(|d| int_field(d, "pending_ver"));
        let mut done = 0;
        let mut retire = None;
        let ver = match pending {
            Some(p) => match resume_done(current.as_ref(), key, p) {
                // The same input stopped midway: keep what it stored.
                Some(d) => {
                    done = d;
                    p
                }
                None => {
                    // Another writer's version: it becomes an old version
                    // (deleted after the switch, off the critical path); this
                    // write takes a number above every version.
                    retire = Some(p);
                    let old = collect::old_versions(current.as_ref());
                    old.iter()
                        .chain([p, served.as_ref().map_or(0, |z| z.ver)].iter())
                        .max()
                        .copied()
                        .unwrap_or(p)
                        + 1
                }
            },
            // A zone deleted before numbers its new versions above the
            // last one it served (their nodes may not all be gone yet).
            None => served
                .as_ref()
                .map_or_else(|| after_deleted(current.as_ref()), |z| z.ver + 1),
        };
        let mut update = match key {
            Some(key) => doc! {"$set": {
                "pending_ver": ver,
                "resume": {"key": key, "ver": ver, "done": done as i64},
            }},
            None => doc! {"$set": {"pending_ver": ver}, "$unset": {"resume": ""}},
        };
        if let Some(p) = retire {
            update.insert("$addToSet", doc! {OLD_VERSIONS: p});
        }
        self.zones
            .update_one(doc! {"_id": &id}, update)
            .upsert(true)
            .await?;
        let writer = ZoneWriter::new(self, zone, ver, WriteMode::Replace, served, key, None);
        Ok((writer, done))
    }
}

/// True when a merge into the zone (document `zone_doc`) is live: while
/// it writes, no journal entry is exact and the serial is not tied to a
/// generation (merge_journal.rs).
pub fn merge_live(zone_doc: Option<&Document>) -> bool {
    merge_journal::other_merge_live(zone_doc, None)
}

impl Store {
    /// A merge lists itself as live, which keeps everyone else's entries
    /// inexact while it writes, and keeps a journal: of what it writes in
    /// an unsigned zone; in a `secured` one, of its signer's node images
    /// (the signer writes RRSIGs and chain records the merge does not see).
    async fn begin_merge_journal(
        &self,
        writer: &mut ZoneWriter,
        zone_doc: Option<&Document>,
        info: &ZoneInfo,
        secured: bool,
    ) -> Result<(), StoreError> {
        let id = merge_journal::merge_id();
        let alone = !merge_journal::other_merge_live(zone_doc, None);
        let serial_gen = zone_doc
            .and_then(|d| int_field(d, SERIAL_GEN))
            .filter(|_| alone);
        let soa = self.apex_soa_record(&info.apex, info.ver).await?;
        let journal = match secured {
            false => MergeJournal::new(info.gen, serial_gen, soa),
            true => MergeJournal::imaged(info.gen, serial_gen, soa),
        };
        *writer.journal.lock().unwrap_or_else(|p| p.into_inner()) = Some(journal);
        self.zones
            .update_one(
                doc! {"_id": info.apex.to_string()},
                doc! {
                    "$set": {format!("{}.{id}", merge_journal::MERGING): DateTime::now()},
                    "$unset": {SERIAL_GEN: ""},
                },
            )
            .await?;
        writer.merge_id = Some(id);
        Ok(())
    }
}

impl ZoneWriter {
    /// The content version being written (for `Merge`, the served version
    /// as last seen: it follows a switch by another writer).
    pub fn ver(&self) -> i64 {
        self.ver.load(Ordering::SeqCst)
    }

    /// The zone being written.
    pub fn zone(&self) -> &Name {
        &self.zone
    }

    /// The mode in effect (a `Merge` into a new zone becomes `Replace`).
    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    /// `Merge`: the zone's generation when this writer last found it
    /// switched to a new version by another writer (its batches from then
    /// on went into that version); `None` if that never happened.
    pub fn moved_at_gen(&self) -> Option<i64> {
        *self.moved_gen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The zone as served before this write began, if it was.
    pub fn previous(&self) -> Option<&ZoneInfo> {
        self.previous.as_ref()
    }

    /// Writes one batch in a single unordered bulk operation.
    ///
    /// In `Replace` mode documents are inserted; any that already exist (a
    /// name seen again, or a re-run) are merged instead, so a batch can be
    /// written any number of times with the same result.
    ///
    /// In `Merge` mode the batch goes into the served version and is
    /// acknowledged (returns) only once it is published there: if another
    /// writer switched the zone to a new version meanwhile, the batch is
    /// written again into that one first (see `settle`).
    pub async fn write_nodes(&self, batch: &[NodeWrite]) -> Result<WriteStats, StoreError> {
        if batch.is_empty() {
            return Ok(WriteStats::default());
        }
        let ver = self.ver();
        let stats = self.write_into(ver, batch).await?;
        if self.mode == WriteMode::Merge {
            self.unsettled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((ver, batch.to_vec()));
            self.settle().await?;
        }
        Ok(stats)
    }

    /// Inserts `batch` into version `ver`, merging names that exist.
    async fn write_into(&self, ver: i64, batch: &[NodeWrite]) -> Result<WriteStats, StoreError> {
        let db = self.store.database();
        let mut stats = WriteStats::default();
        // Insert first in both modes: a name that is new (the usual case) is
        // one cheap insert; only names that exist already are merged.
        let docs: Vec<Document> = batch
            .iter()
            .map(|n| schema::node_doc(&self.zone, ver, &n.name, &n.rrsets))
            .collect();
        let dups = insert_nodes(db, docs).await?;
        stats.inserted = (batch.len() - dups.len()) as u64;
        self.with_journal(|j| {
            let inserted = batch.iter().enumerate().filter(|(i, _)| !dups.contains(i));
            inserted.for_each(|(_, n)| j.note_insert(n));
        });
        let to_merge: Vec<&NodeWrite> = dups.iter().filter_map(|i| batch.get(*i)).collect();
        if !to_merge.is_empty() {
            let _serial = self.merge_lock.lock().await;
            self.journal_merges(ver, &to_merge).await?;
            let updates: Vec<Document> = to_merge
                .iter()
                .map(|n| merge_update(&self.zone, ver, n))
                .collect();
            self.store.run_updates(updates).await?;
            stats.merged = to_merge.len() as u64;
        }
        Ok(stats)
    }

    /// Journals names about to be merged: their before-images are read
    /// (under the merge lock, so this writer's own updates do not race).
    async fn journal_merges(&self, ver: i64, nodes: &[&NodeWrite]) -> Result<(), StoreError> {
        match self.with_journal(|j| j.imaged) {
            None => return Ok(()),
            // Written outside the signer's images: spoiled, nothing to read.
            Some(true) => {
                self.with_journal(MergeJournal::spoil);
                return Ok(());
            }
            Some(false) => {}
        }
        let reads = nodes
            .iter()
            .map(|n| self.store.read_node_rrsets(&self.zone, ver, &n.name));
        let before = futures::future::try_join_all(reads).await?;
        self.with_journal(|j| {
            for (n, b) in nodes.iter().zip(&before) {
                j.note_merge(n, b);
            }
        });
        Ok(())
    }

    /// Notes names that a signing caller wrote around
    /// [`ZoneWriter::write_nodes`] (a signed merge writes records, chain
    /// neighbours and the apex's SOA through the signer), and marks this
    /// writer's change records as signed ([`schema::ChangeRecord::signed`]).
    pub fn note_signed<'a>(&self, names: impl Iterator<Item = &'a Name>) {
        self.signed.store(true, Ordering::Relaxed);
        self.note_changed(names);
    }

    /// The caller stopped signing (it handed the signing lease to another
    /// signer): change records from now on are unsigned, and the SOA of a
    /// secured zone is left to the signer.
    pub fn note_unsigned(&self) {
        self.signed.store(false, Ordering::Relaxed);
    }

    /// Remembers names written (stored already) for the next change record.
    /// A name noted twice (an edited name, then signed) counts once: only
    /// more distinct names than a record holds make it say "all".
    fn note_changed<'a>(&self, names: impl Iterator<Item = &'a Name>) {
        let mut changed = self.changed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = changed.as_mut() {
            list.extend(names.cloned());
            if list.len() > schema::MAX_CHANGED_NAMES {
                list.sort_unstable();
                list.dedup();
            }
            if list.len() > schema::MAX_CHANGED_NAMES {
                *changed = None;
            }
        }
    }

    /// Records that the first `done` records of the input are stored (see
    /// [`Store::begin_resumable_write`]); for a merge, that they are
    /// acknowledged too (published in a change record). Does nothing
    /// without a key.
    pub async fn checkpoint(&self, done: u64) -> Result<(), StoreError> {
        if self.resume_key.is_none() {
            return Ok(());
        }
        let lock = self
            .store
            .lock(ZONE_LOCK, &self.zone, "checkpoint", LOCK_WAIT)
            .await?;
        // Only while the zone's one resume slot is still this input's: two
        // merges into one zone each take it at their start, and a count of
        // one moved under the other's key would make that one's re-run skip
        // records it never wrote. Under the zone lock nobody else writes
        // the document, so the condition holds on FerretDB too.
        let r = self
            .store
            .zones
            .update_one(
                doc! {"_id": self.zone.to_string(), "resume.key": self.resume_key.as_deref()},
                doc! {"$set": {"resume.done": done as i64}},
            )
            .await
            .map(|_| ())
            .map_err(StoreError::from);
        lock.release_with(r).await
    }
}
