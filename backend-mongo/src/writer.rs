//! Writing a zone: the only way mongodns tools change stored data.
//!
//! ```text
//!  begin(zone, Replace) ─► pending_ver = ver+1 (a killed run's pending
//!        │   version is listed in old_vers and a higher number taken)
//!        │   write_nodes(batch) … (insert; duplicates merged by update)
//!        ▼
//!  switch() ─► SOA serial checked/bumped ─► seq += 1 ─► zones{ver, gen=seq,
//!        │     old_vers += previous ver}   (readers switch here, at once)
//!        └─► collect_old_versions(): after a grace period, nodes of every
//!            version in old_vers are deleted (batched, restartable)
//!  finish() = switch() + collect_old_versions()
//!
//!  begin(zone, Merge) ─► writes go into the served ver as upserts
//!        (RRsets gain records; TTL set) ─► finish(): serial+1, gen=seq
//! ```
//!
//! Every writer ends by bumping the zone's `gen` to a new value of the global
//! counter `meta.seq`, which is how servers notice changes.

use crate::schema::{self, node_id, RRset, ZoneInfo, SEQ_ID};
use crate::store::{Store, StoreError};
use crate::{Name, RType};
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::options::ReturnDocument;
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

/// A write in progress on one zone.
pub struct ZoneWriter {
    store: Store,
    zone: Name,
    ver: i64,
    mode: WriteMode,
    previous: Option<ZoneInfo>,
    /// Merge updates run one batch at a time: FerretDB applies an update as
    /// read-modify-write without isolation, so two concurrent `$addToSet`s on
    /// one document can lose one. Inserts need no lock (the unique `_id`
    /// index arbitrates), and contiguous zone files rarely merge at all.
    merge_lock: tokio::sync::Mutex<()>,
    /// Identity of the input, for resuming a killed write (see `resume`).
    resume_key: Option<String>,
    /// When a merge last published a new generation (see `publish_progress`).
    last_publish: std::sync::Mutex<std::time::Instant>,
    /// `Merge`: names written since the last publish, for the change
    /// record; `None` once anything unlisted may have changed.
    changed: std::sync::Mutex<Option<Vec<Name>>>,
    /// The caller signs what it writes (see [`ZoneWriter::note_signed`]).
    signed: std::sync::atomic::AtomicBool,
}

/// What [`ZoneWriter::switch`] did.
#[derive(Clone, Debug)]
pub struct Switched {
    /// The zone as now served.
    pub zone: ZoneInfo,
    /// The version it replaced, now waiting to be deleted.
    pub old: Option<i64>,
}

/// What [`Store::collect_old_versions`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Versions whose nodes are now all deleted.
    pub versions: Vec<i64>,
    /// Node documents deleted.
    pub deleted: u64,
}

/// How often a long merge publishes a new generation, so servers see its
/// writes while it runs (well within their one-second freshness target).
pub const PUBLISH_EVERY: Duration = Duration::from_millis(200);

const DUPLICATE_KEY: i32 = 11000;

/// How long change records are kept: servers read them within a poll
/// interval; one that falls further behind drops whole zones instead.
pub const CHANGE_RECORDS_KEPT: Duration = Duration::from_secs(600);

/// Update statements sent in one `update` command, and only one such
/// command at a time per process ([`UPDATE_GATE`]).
///
/// FerretDB 1.24 (SQLite backend) deadlocks on big `update` commands: its
/// handler (`internal/handler/msg_update.go`) opens a query iterator per
/// statement and closes them all only when the command ends (`defer` in the
/// loop), each holding one of the database's 100 pooled SQLite connections,
/// while each statement's write needs one more. An `update` of ~100
/// statements (or several concurrent ones adding up to that) waits forever,
/// holding FerretDB's metadata lock, after which *every* command, even
/// `ping`, hangs until FerretDB is restarted. Measured: 60 statements answer
/// in 60 ms, 100 never. Each statement costs FerretDB ~1 ms anyway, so
/// small serialized commands lose nothing; on MongoDB they are harmless.
pub const MAX_UPDATES_PER_COMMAND: usize = 16;

/// One change of `meta.seq` at a time per process: FerretDB runs
/// `findAndModify` as read-modify-write without isolation, so two at once
/// can both insert the counter (E11000) or lose an increment.
static SEQ_GATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One `update` command in flight per process (see [`MAX_UPDATES_PER_COMMAND`]).
static UPDATE_GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Field of a zone document listing versions that were replaced (or left
/// pending by a killed writer) and whose nodes may still be stored. Readers
/// never look at them; [`Store::collect_old_versions`] deletes them.
pub const OLD_VERSIONS: &str = "old_vers";

/// The versions listed in a zone document's [`OLD_VERSIONS`].
fn old_versions(zone_doc: Option<&Document>) -> Vec<i64> {
    zone_doc
        .and_then(|d| d.get_array(OLD_VERSIONS).ok())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .collect()
        })
        .unwrap_or_default()
}

/// The `resume` field of a zone document: `{key, ver, done}`, when it
/// matches `key` and `ver`.
fn resume_done(zone_doc: Option<&Document>, key: Option<&str>, ver: i64) -> Option<u64> {
    let key = key?;
    let r = zone_doc?.get_document("resume").ok()?;
    let rver = r
        .get("ver")
        .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))?;
    let done = r
        .get("done")
        .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))?;
    (r.get_str("key").ok()? == key && rver == ver).then_some(done.max(0) as u64)
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
    ///   `pending_ver` is deleted first, as without a key.
    /// * `Merge`: writes go to the served version anyway; the count lets a
    ///   re-run skip the records already merged (re-merging them would
    ///   change nothing either).
    ///
    /// The count only moves forward through [`ZoneWriter::checkpoint`], and
    /// `finish` removes it.
    pub async fn begin_resumable_write(
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
        if mode == WriteMode::Merge {
            if let Some(info) = &served {
                let done = resume_done(current.as_ref(), key, info.ver).unwrap_or(0);
                if let Some(key) = key {
                    self.zones
                        .update_one(
                            doc! {"_id": &id},
                            doc! {"$set": {"resume": {"key": key, "ver": info.ver, "done": done as i64}}},
                        )
                        .await?;
                }
                return Ok((
                    ZoneWriter {
                        store: self.clone(),
                        zone: zone.clone(),
                        ver: info.ver,
                        mode,
                        previous: served.clone(),
                        merge_lock: Default::default(),
                        resume_key: key.map(str::to_string),
                        last_publish: std::sync::Mutex::new(std::time::Instant::now()),
                        signed: std::sync::atomic::AtomicBool::new(false),
                        // A resumed merge skips records a killed run wrote
                        // and may never have published: record "all" once.
                        changed: std::sync::Mutex::new((done == 0).then(Vec::new)),
                    },
                    done,
                ));
            }
        }
        let pending = current
            .as_ref()
            .and_then(|d| d.get("pending_ver"))
            .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
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
                    // Another input stopped midway: what it left becomes an
                    // old version (deleted after the switch, off the critical
                    // path); this write takes a number above every version.
                    retire = Some(p);
                    let old = old_versions(current.as_ref());
                    old.iter()
                        .chain([p, served.as_ref().map_or(0, |z| z.ver)].iter())
                        .max()
                        .copied()
                        .unwrap_or(p)
                        + 1
                }
            },
            None => served.as_ref().map_or(1, |z| z.ver + 1),
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
        Ok((
            ZoneWriter {
                store: self.clone(),
                zone: zone.clone(),
                ver,
                mode: WriteMode::Replace,
                previous: served,
                merge_lock: Default::default(),
                resume_key: key.map(str::to_string),
                last_publish: std::sync::Mutex::new(std::time::Instant::now()),
                signed: std::sync::atomic::AtomicBool::new(false),
                changed: std::sync::Mutex::new(None),
            },
            done,
        ))
    }

    /// Deletes the nodes of every old version of `zone` (those listed in its
    /// `old_vers`: replaced by a switch, or left pending by a killed
    /// writer), then unlists each. Never touches the served version or a
    /// pending one. Waits first until `grace` has passed since the zone's
    /// last switch (`updated`), so servers still reading the version just
    /// replaced finish cleanly. Batched and bounded as
    /// [`Store::delete_version_with`]; `progress` gets the running count.
    /// Killed midway, it leaves the version listed, and any later call (the
    /// next `finish`, `mongodns-sign secure-zone`, `cleanup`) completes it.
    pub async fn collect_old_versions(
        &self,
        zone: &Name,
        grace: Duration,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Collected, StoreError> {
        let id = zone.to_string();
        let Some(d) = self.zones.find_one(doc! {"_id": &id}).await? else {
            return Ok(Collected::default());
        };
        let old = old_versions(Some(&d));
        if old.is_empty() {
            return Ok(Collected::default());
        }
        let int = |k: &str| {
            d.get(k)
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
        };
        let live = [int("ver"), int("pending_ver")];
        if let Ok(updated) = d.get_datetime("updated") {
            let age = DateTime::now().timestamp_millis() - updated.timestamp_millis();
            let wait = (grace.as_millis() as i64 - age.max(0)).max(0);
            tokio::time::sleep(Duration::from_millis(wait as u64)).await;
        }
        let mut out = Collected::default();
        for v in old {
            if !live.contains(&Some(v)) {
                let before = out.deleted;
                out.deleted += self
                    .delete_version_with(zone, v, &|n| progress(before + n))
                    .await?;
            }
            self.zones
                .update_one(doc! {"_id": &id}, doc! {"$pull": {OLD_VERSIONS: v}})
                .await?;
            out.versions.push(v);
        }
        Ok(out)
    }

    /// Increments and returns the global change counter.
    pub async fn next_seq(&self) -> Result<i64, StoreError> {
        let _one = SEQ_GATE.lock().await;
        let d = self
            .meta
            .find_one_and_update(doc! {"_id": SEQ_ID}, doc! {"$inc": {"seq": 1_i64}})
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await?
            .unwrap_or_default();
        Ok(d.get("seq")
            .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
            .unwrap_or(1))
    }
}

fn merge_update(zone: &Name, ver: i64, node: &NodeWrite) -> Document {
    let id = node_id(zone, ver, &node.name);
    let mut on_insert = doc! {
        "zone": zone.to_string(),
        "ver": ver,
        "name": node.name.to_string(),
        "ck": node.name.canonical_key(),
    };
    let mut update = Document::new();
    if node.rrsets.is_empty() {
        on_insert.insert("rrsets", Document::new());
    } else {
        let mut set = Document::new();
        let mut add = Document::new();
        for rrset in &node.rrsets {
            let key = rrset.rtype.mnemonic();
            set.insert(format!("rrsets.{key}.ttl"), i64::from(rrset.ttl));
            let each: Vec<Bson> = rrset.rdata.iter().map(|r| schema::binary(r)).collect();
            add.insert(format!("rrsets.{key}.rd"), doc! {"$each": each});
        }
        update.insert("$set", set);
        update.insert("$addToSet", add);
    }
    update.insert("$setOnInsert", on_insert);
    doc! {"q": {"_id": id}, "u": update, "upsert": true}
}

/// Inserts node documents in one unordered command; returns the indexes of
/// those that already existed (to be merged), and fails on any other error.
async fn insert_nodes(
    db: &mongodb::Database,
    docs: Vec<Document>,
) -> Result<Vec<usize>, StoreError> {
    let reply = db
        .run_command(doc! {"insert": schema::NODES, "documents": docs, "ordered": false})
        .await?;
    let (dups, other): (Vec<_>, Vec<_>) = command_errors(&reply)
        .into_iter()
        .partition(|(_, code, _)| *code == DUPLICATE_KEY);
    if !other.is_empty() {
        return Err(write_failure("insert", &other));
    }
    Ok(dups.into_iter().map(|(i, _, _)| i).collect())
}

fn command_errors(reply: &Document) -> Vec<(usize, i32, String)> {
    let mut out = Vec::new();
    if let Ok(errors) = reply.get_array("writeErrors") {
        for e in errors.iter().filter_map(Bson::as_document) {
            let index = e
                .get("index")
                .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
                .unwrap_or(-1);
            let code = e.get("code").and_then(|v| v.as_i32()).unwrap_or(0);
            let msg = e.get_str("errmsg").unwrap_or("").to_string();
            out.push((index as usize, code, msg));
        }
    }
    out
}

fn write_failure(what: &str, errors: &[(usize, i32, String)]) -> StoreError {
    let (index, code, msg) = &errors[0];
    StoreError::Database(mongodb::error::Error::custom(format!(
        "{what}: {} write error(s), first at #{index}: code {code}: {msg}",
        errors.len()
    )))
}

impl ZoneWriter {
    /// The content version being written.
    pub fn ver(&self) -> i64 {
        self.ver
    }

    /// The mode in effect (a `Merge` into a new zone becomes `Replace`).
    pub fn mode(&self) -> WriteMode {
        self.mode
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
    pub async fn write_nodes(&self, batch: &[NodeWrite]) -> Result<WriteStats, StoreError> {
        if batch.is_empty() {
            return Ok(WriteStats::default());
        }
        let db = self.store.database();
        let mut stats = WriteStats::default();
        // Insert first in both modes: a name that is new (the usual case) is
        // one cheap insert; only names that exist already are merged.
        let docs: Vec<Document> = batch
            .iter()
            .map(|n| schema::node_doc(&self.zone, self.ver, &n.name, &n.rrsets))
            .collect();
        let dups = insert_nodes(db, docs).await?;
        stats.inserted = (batch.len() - dups.len()) as u64;
        let to_merge: Vec<&NodeWrite> = dups.iter().filter_map(|i| batch.get(*i)).collect();
        if !to_merge.is_empty() {
            let _serial = self.merge_lock.lock().await;
            let updates: Vec<Document> = to_merge
                .iter()
                .map(|n| merge_update(&self.zone, self.ver, n))
                .collect();
            self.store.run_updates(updates).await?;
            stats.merged = to_merge.len() as u64;
        }
        if self.mode == WriteMode::Merge {
            self.note_changed(batch.iter().map(|n| &n.name));
            self.publish_progress().await?;
        }
        Ok(stats)
    }

    /// In `Merge` mode, writes are visible in the database at once; this
    /// moves the zone's generation (at most every [`PUBLISH_EVERY`]) so that
    /// servers drop what they cached before those writes.
    async fn publish_progress(&self) -> Result<(), StoreError> {
        {
            let mut last = self.last_publish.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() < PUBLISH_EVERY {
                return Ok(());
            }
            *last = std::time::Instant::now();
        }
        let gen = self.record_change().await?;
        self.store
            .zones
            .update_one(
                doc! {"_id": self.zone.to_string()},
                doc! {"$max": {"gen": gen}},
            )
            .await?;
        Ok(())
    }

    /// Notes names that a signing caller wrote around
    /// [`ZoneWriter::write_nodes`] (a signed merge writes records, chain
    /// neighbours and the apex's SOA through the signer), and marks this
    /// writer's change records as signed ([`schema::ChangeRecord::signed`]).
    pub fn note_signed<'a>(&self, names: impl Iterator<Item = &'a Name>) {
        self.signed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.note_changed(names);
    }

    /// Remembers names written (stored already) for the next change record.
    fn note_changed<'a>(&self, names: impl Iterator<Item = &'a Name>) {
        let mut changed = self.changed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(list) = changed.as_mut() {
            list.extend(names.cloned());
            if list.len() > schema::MAX_CHANGED_NAMES {
                *changed = None;
            }
        }
    }

    /// Takes a new generation and, before any zone shows it, stores what
    /// it changed: the names written since the last publish (`Merge`), or
    /// "all". Servers that find the record drop only those names from their
    /// record caches; without one they drop the whole zone.
    async fn record_change(&self) -> Result<i64, StoreError> {
        let names = match self.mode {
            WriteMode::Merge => self
                .changed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .replace(Vec::new()),
            WriteMode::Replace => None,
        };
        let gen = self.store.next_seq().await?;
        // A publish with no names written through this writer: something
        // else wrote, so say "all" (slower for servers, never wrong).
        if self.mode == WriteMode::Merge {
            let names = names.filter(|n| !n.is_empty()).map(|mut n| {
                n.sort();
                n.dedup();
                n
            });
            let signed = self.signed.load(std::sync::atomic::Ordering::Relaxed);
            let record = schema::change_doc(gen, &self.zone, names.as_deref(), signed);
            if let Err(e) = self.store.changes.insert_one(record).await {
                // Without the record, servers drop the whole zone: slower,
                // never wrong.
                tracing::debug!(error = %e, "change record not stored");
            }
        }
        Ok(gen)
    }

    /// Publishes the write: fixes the SOA serial, bumps the generation and,
    /// for `Replace`, switches readers to the new version and, after
    /// `grace`, deletes the old one. Returns the zone as now served.
    pub async fn finish(self, grace: Duration) -> Result<ZoneInfo, StoreError> {
        let store = self.store.clone();
        let merge = self.mode == WriteMode::Merge;
        let switched = self.switch().await?;
        if merge {
            if let Err(e) = store.prune_changes(CHANGE_RECORDS_KEPT).await {
                tracing::debug!(error = %e, "old change records not pruned");
            }
        }
        if switched.old.is_some() {
            store
                .collect_old_versions(&switched.zone.apex, grace, &|_| {})
                .await?;
        }
        Ok(switched.zone)
    }

    /// Publishes the write like [`ZoneWriter::finish`] but leaves the old
    /// version in place (listed in the zone's `old_vers`, never served):
    /// the caller deletes it when it suits, with
    /// [`Store::collect_old_versions`], or a later write does.
    pub async fn switch(self) -> Result<Switched, StoreError> {
        let (serial, gen) = self.publish_inner(true).await?;
        let old = match (self.mode, &self.previous) {
            (WriteMode::Replace, Some(prev)) if prev.ver != self.ver => Some(prev.ver),
            _ => None,
        };
        Ok(Switched {
            zone: ZoneInfo {
                apex: self.zone,
                ver: self.ver,
                gen,
                serial,
            },
            old,
        })
    }

    /// Records that the first `done` records of the input are stored (see
    /// [`Store::begin_resumable_write`]). Does nothing without a key.
    pub async fn checkpoint(&self, done: u64) -> Result<(), StoreError> {
        if self.resume_key.is_none() {
            return Ok(());
        }
        self.store
            .zones
            .update_one(
                // `_id` alone: the only filter FerretDB answers from an index.
                doc! {"_id": self.zone.to_string()},
                doc! {"$set": {"resume.done": done as i64}},
            )
            .await?;
        Ok(())
    }

    /// `Merge` only: makes what was merged so far official while the write
    /// goes on: the SOA serial moves forward and the zone gets a new `gen`,
    /// so servers drop what they cached. Returns the serial.
    pub async fn publish(&self) -> Result<u32, StoreError> {
        if self.mode != WriteMode::Merge {
            return Err(StoreError::Database(mongodb::error::Error::custom(
                "publish is for Merge writes: a Replace write is published by finish",
            )));
        }
        Ok(self.publish_inner(false).await?.0)
    }

    async fn publish_inner(&self, last: bool) -> Result<(u32, i64), StoreError> {
        let zone_id = self.zone.to_string();
        let apex_id = node_id(&self.zone, self.ver, &self.zone);
        let apex = self.store.nodes.find_one(doc! {"_id": &apex_id}).await?;
        let soa = apex
            .as_ref()
            .map(schema::node_from_doc)
            .transpose()?
            .and_then(|n| n.rrset(RType::SOA).cloned());
        let soa = match soa {
            Some(s) if !s.rdata.is_empty() => s,
            _ => {
                return Err(StoreError::Database(mongodb::error::Error::custom(
                    format!("zone {zone_id} has no SOA record at its apex; nothing was published"),
                )))
            }
        };
        let written_serial = soa_serial(&soa.rdata[0]).ok_or_else(|| {
            StoreError::Database(mongodb::error::Error::custom(
                "malformed SOA rdata at the apex",
            ))
        })?;
        // The serial must move forward whenever the content changed (RFC 1982);
        // a writer that already moved it (a signer, which also signed the
        // SOA) keeps its value.
        let serial = match &self.previous {
            Some(prev) if !serial_gt(written_serial, prev.serial) => {
                let base = if serial_gt(written_serial, prev.serial) {
                    written_serial
                } else {
                    prev.serial
                };
                base.wrapping_add(1)
            }
            _ => written_serial,
        };
        if serial != written_serial {
            let mut rdata = soa.rdata[0].to_vec();
            set_soa_serial(&mut rdata, serial);
            self.store
                .nodes
                .update_one(
                    doc! {"_id": &apex_id},
                    doc! {"$set": {"rrsets.SOA.rd": [schema::binary(&rdata)]}},
                )
                .await?;
        }
        if serial != written_serial {
            self.note_changed(std::iter::once(&self.zone));
        }
        let gen = self.record_change().await?;
        let set = doc! {"ver": self.ver, "serial": i64::from(serial), "gen": gen, "updated": DateTime::now()};
        let mut update = if last {
            doc! {"$set": set, "$unset": {"pending_ver": "", "resume": ""}}
        } else {
            doc! {"$set": set}
        };
        if let (true, WriteMode::Replace, Some(prev)) = (last, self.mode, &self.previous) {
            if prev.ver != self.ver {
                // Recorded in the switch itself: a writer killed right after
                // it leaves the old version listed for a later run to delete.
                update.insert("$addToSet", doc! {OLD_VERSIONS: prev.ver});
            }
        }
        if last && self.mode == WriteMode::Replace {
            // Switch only if this write's version is still the pending one:
            // a later writer that took over (and listed this version in
            // old_vers, to be deleted) must never see it served.
            let r = self
                .store
                .zones
                .update_one(doc! {"_id": &zone_id, "pending_ver": self.ver}, update)
                .await?;
            if r.matched_count != 1 {
                return Err(StoreError::Database(mongodb::error::Error::custom(format!(
                    "zone {zone_id}: another writer took over version {} before the switch; nothing was published",
                    self.ver
                ))));
            }
        } else {
            self.store
                .zones
                .update_one(doc! {"_id": &zone_id}, update)
                .upsert(true)
                .await?;
        }
        Ok((serial, gen))
    }
}

/// One complete zone, for [`Store::write_zones`].
#[derive(Clone, Debug)]
pub struct ZoneContent {
    /// The apex.
    pub apex: Name,
    /// Every node (the apex with its SOA among them).
    pub nodes: Vec<NodeWrite>,
    /// Identity of this zone's input, so a killed run's pending version can
    /// be reused (see [`Store::begin_resumable_write`]).
    pub resume_key: Option<String>,
}

impl Store {
    /// Writes many small, complete zones with a few round trips for all of
    /// them, instead of several per zone:
    ///
    /// ```text
    ///  zones._id point reads (concurrent)  ─► new zones: ver = pending_ver or 1
    ///  one update: pending_ver (+ resume)  ─► one unordered insert of every node
    ///  one $inc of meta.seq by the count   ─► one update: ver, serial, gen per zone
    /// ```
    ///
    /// Each zone switches on its own with a single-document update, as in
    /// [`ZoneWriter::finish`]. Zones that are already served go through
    /// [`Store::begin_resumable_write`] one by one with `mode` (merge or
    /// replace, with `grace`), exactly as a single-zone import would.
    pub async fn write_zones(
        &self,
        zones: &[ZoneContent],
        mode: WriteMode,
        grace: Duration,
    ) -> Result<WriteStats, StoreError> {
        let mut stats = WriteStats::default();
        if zones.is_empty() {
            return Ok(stats);
        }
        let docs =
            futures::future::try_join_all(zones.iter().map(|z| async move {
                self.zones.find_one(doc! {"_id": z.apex.to_string()}).await
            }))
            .await?;
        // (zone, version to write, has a zone document already)
        let mut fresh: Vec<(&ZoneContent, i64, bool)> = Vec::new();
        for (zone, current) in zones.iter().zip(&docs) {
            if current.as_ref().is_some_and(|d| d.contains_key("ver")) {
                let (writer, _) = self
                    .begin_resumable_write(&zone.apex, mode, zone.resume_key.as_deref())
                    .await?;
                let s = writer.write_nodes(&zone.nodes).await?;
                stats.inserted += s.inserted;
                stats.merged += s.merged;
                writer.finish(grace).await?;
                continue;
            }
            let pending = current
                .as_ref()
                .and_then(|d| d.get("pending_ver"))
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)));
            let ver = match pending {
                Some(p) => {
                    if resume_done(current.as_ref(), zone.resume_key.as_deref(), p).is_none() {
                        self.delete_version(&zone.apex, p).await?;
                    }
                    p
                }
                None => 1,
            };
            fresh.push((zone, ver, current.is_some()));
        }
        if fresh.is_empty() {
            return Ok(stats);
        }
        let mut serials = Vec::with_capacity(fresh.len());
        for (zone, _, _) in &fresh {
            let serial = zone
                .nodes
                .iter()
                .find(|n| n.name == zone.apex)
                .and_then(|n| n.rrsets.iter().find(|r| r.rtype == RType::SOA))
                .and_then(|r| r.rdata.first())
                .and_then(|rd| soa_serial(rd))
                .ok_or_else(|| {
                    StoreError::Database(mongodb::error::Error::custom(format!(
                        "zone {} has no SOA record at its apex; nothing was published",
                        zone.apex
                    )))
                })?;
            serials.push(serial);
        }
        let db = self.database();
        // Mark each zone as being written (pending_ver, resume key). Zones
        // without a document (the usual case) get it by one bulk insert;
        // FerretDB updates cost ~1 ms per statement, inserts far less.
        let marker = |z: &ZoneContent, ver: i64| match &z.resume_key {
            Some(key) => {
                doc! {"pending_ver": ver, "resume": {"key": key, "ver": ver, "done": 0_i64}}
            }
            None => doc! {"pending_ver": ver},
        };
        let mut inserts = Vec::new();
        let mut updates = Vec::new();
        for (z, ver, has_doc) in &fresh {
            if *has_doc {
                updates.push(doc! {"q": {"_id": z.apex.to_string()}, "u": {"$set": marker(z, *ver)}, "upsert": true});
            } else {
                let mut d = doc! {"_id": z.apex.to_string()};
                d.extend(marker(z, *ver));
                inserts.push(d);
            }
        }
        if !inserts.is_empty() {
            let reply = db
                .run_command(doc! {"insert": schema::ZONES, "documents": inserts, "ordered": false})
                .await?;
            let errors = command_errors(&reply);
            if !errors.is_empty() {
                return Err(write_failure("insert zones", &errors));
            }
        }
        self.run_updates_on(schema::ZONES, updates).await?;
        let mut node_docs = Vec::new();
        let mut owners: Vec<(&Name, i64, &NodeWrite)> = Vec::new();
        for (z, ver, _) in &fresh {
            for n in &z.nodes {
                node_docs.push(schema::node_doc(&z.apex, *ver, &n.name, &n.rrsets));
                owners.push((&z.apex, *ver, n));
            }
        }
        let dups = insert_nodes(db, node_docs).await?;
        stats.inserted += (owners.len() - dups.len()) as u64;
        if !dups.is_empty() {
            // Left by a killed run of the same input: merge, which changes nothing.
            let updates: Vec<Document> = dups
                .iter()
                .filter_map(|i| owners.get(*i))
                .map(|(apex, ver, n)| merge_update(apex, *ver, n))
                .collect();
            stats.merged += updates.len() as u64;
            self.run_updates(updates).await?;
        }
        let count = fresh.len() as i64;
        let seq_gate = SEQ_GATE.lock().await;
        let top = self
            .meta
            .find_one_and_update(doc! {"_id": SEQ_ID}, doc! {"$inc": {"seq": count}})
            .upsert(true)
            .return_document(ReturnDocument::After)
            .await?
            .and_then(|d| {
                d.get("seq")
                    .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
            })
            .unwrap_or(count);
        drop(seq_gate);
        // Switch: none of these zones was served, so replacing each marker
        // by the served document (delete, then insert; both bulk) changes
        // what readers see from "no zone" to "the whole zone" at once.
        let now = DateTime::now();
        let deletes: Vec<Document> = fresh
            .iter()
            .map(|(z, _, _)| doc! {"q": {"_id": z.apex.to_string()}, "limit": 1})
            .collect();
        let reply = db
            .run_command(doc! {"delete": schema::ZONES, "deletes": deletes, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("delete zone markers", &errors));
        }
        let served: Vec<Document> = fresh
            .iter()
            .zip(&serials)
            .enumerate()
            .map(|(k, ((z, ver, _), serial))| {
                doc! {
                    "_id": z.apex.to_string(),
                    "ver": ver,
                    "serial": i64::from(*serial),
                    "gen": top - count + 1 + k as i64,
                    "updated": now,
                }
            })
            .collect();
        let reply = db
            .run_command(doc! {"insert": schema::ZONES, "documents": served, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("insert zones", &errors));
        }
        Ok(stats)
    }

    /// Runs node updates in commands of at most [`MAX_UPDATES_PER_COMMAND`]
    /// statements.
    pub(crate) async fn run_updates(&self, updates: Vec<Document>) -> Result<(), StoreError> {
        self.run_updates_on(schema::NODES, updates).await
    }

    /// [`Store::run_updates`] on any collection.
    async fn run_updates_on(&self, coll: &str, updates: Vec<Document>) -> Result<(), StoreError> {
        for part in updates.chunks(MAX_UPDATES_PER_COMMAND) {
            let _gate = UPDATE_GATE.acquire().await.expect("never closed");
            let reply = self
                .db
                .run_command(doc! {"update": coll, "updates": part.to_vec(), "ordered": false})
                .await?;
            let errors = command_errors(&reply);
            if !errors.is_empty() {
                return Err(write_failure("update", &errors));
            }
        }
        Ok(())
    }

    /// Reads a resume counter kept in `meta` under `key` (multi-zone imports).
    pub async fn import_checkpoint(&self, key: &str) -> Result<u64, StoreError> {
        let d = self
            .meta
            .find_one(doc! {"_id": format!("import {key}")})
            .await?;
        Ok(d.and_then(|d| {
            d.get("done")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
        })
        .unwrap_or(0)
        .max(0) as u64)
    }

    /// Sets (or with `None` removes) the resume counter kept in `meta`.
    pub async fn set_import_checkpoint(
        &self,
        key: &str,
        done: Option<u64>,
    ) -> Result<(), StoreError> {
        let id = format!("import {key}");
        match done {
            Some(done) => {
                self.meta
                    .update_one(doc! {"_id": &id}, doc! {"$set": {"done": done as i64}})
                    .upsert(true)
                    .await?;
            }
            None => {
                self.meta.delete_one(doc! {"_id": &id}).await?;
            }
        }
        Ok(())
    }

    /// A description of the database server (for reports): kind and version.
    pub async fn server_description(&self) -> String {
        let info = self
            .db
            .client()
            .database("admin")
            .run_command(doc! {"buildInfo": 1})
            .await
            .unwrap_or_default();
        let version = info.get_str("version").unwrap_or("?");
        match info.get_str("ferretdbVersion") {
            Ok(f) => format!("FerretDB {f} (reports MongoDB {version})"),
            Err(_) => format!("MongoDB {version}"),
        }
    }
}

/// Inserts node documents into a scratch collection with the same indexes
/// as `nodes`, and nothing else: the raw bulk-insert rate that
/// `mongodns-import --baseline` measures.
pub struct BaselineWriter {
    coll: mongodb::Collection<Document>,
    zone: Name,
}

/// Name of the scratch collection used by [`BaselineWriter`].
pub const BASELINE_COLLECTION: &str = "baseline_nodes";

impl BaselineWriter {
    /// Creates (empty) the scratch collection and its indexes.
    pub async fn new(store: &Store, zone: &Name) -> Result<BaselineWriter, StoreError> {
        let coll = store.database().collection::<Document>(BASELINE_COLLECTION);
        coll.drop().await?;
        let by_zone = mongodb::IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "ck": 1})
            .options(
                mongodb::options::IndexOptions::builder()
                    .name("zone_ver_ck".to_string())
                    .build(),
            )
            .build();
        coll.create_index(by_zone).await?;
        Ok(BaselineWriter {
            coll,
            zone: zone.clone(),
        })
    }

    /// One unordered bulk insert of `batch` (as version 1 of the zone).
    pub async fn insert(&self, batch: &[NodeWrite]) -> Result<u64, StoreError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let docs: Vec<Document> = batch
            .iter()
            .map(|n| schema::node_doc(&self.zone, 1, &n.name, &n.rrsets))
            .collect();
        let db = self.coll.namespace().db;
        let reply = self
            .coll
            .client()
            .database(&db)
            .run_command(doc! {"insert": BASELINE_COLLECTION, "documents": docs, "ordered": false})
            .await?;
        let errors = command_errors(&reply);
        if !errors.is_empty() {
            return Err(write_failure("insert", &errors));
        }
        Ok(batch.len() as u64)
    }

    /// Drops the scratch collection.
    pub async fn drop_collection(self) -> Result<(), StoreError> {
        self.coll.drop().await?;
        Ok(())
    }
}

/// The serial of an SOA rdata (after MNAME and RNAME).
pub fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let at = soa_serial_offset(rdata)?;
    let b = rdata.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn set_soa_serial(rdata: &mut [u8], serial: u32) {
    if let Some(at) = soa_serial_offset(rdata) {
        rdata[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    }
}

fn soa_serial_offset(rdata: &[u8]) -> Option<usize> {
    let (_, a) = Name::from_wire_prefix(rdata).ok()?;
    let (_, b) = Name::from_wire_prefix(rdata.get(a..)?).ok()?;
    let at = a + b;
    (rdata.len() >= at + 20).then_some(at)
}

/// `a > b` in serial number arithmetic (RFC 1982).
pub fn serial_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_arithmetic_wraps() {
        assert!(serial_gt(2, 1));
        assert!(!serial_gt(1, 2));
        assert!(serial_gt(0, u32::MAX));
        assert!(!serial_gt(5, 5));
    }

    #[test]
    fn soa_serial_is_read_and_written() {
        let mut rdata = b"\x02ns\x00\x05admin\x00".to_vec();
        rdata.extend_from_slice(&42u32.to_be_bytes());
        rdata.extend_from_slice(&[0; 16]);
        assert_eq!(soa_serial(&rdata), Some(42));
        set_soa_serial(&mut rdata, 43);
        assert_eq!(soa_serial(&rdata), Some(43));
        assert_eq!(soa_serial(&rdata[..10]), None);
    }
}
