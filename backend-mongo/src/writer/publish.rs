//! Publishing a write: acknowledging merge batches, moving the SOA serial
//! and the generation, switching versions — each under the zone lock.
//!
//! ```text
//!  settle (Merge) ─► [lock] every unsettled batch in the served ver?
//!        ├─ yes ─► change record (names), gen = seq ─► [unlock] acknowledged
//!        └─ no  ─► [unlock] write them again into the served ver ─► retry
//!  publish_locked(last) ─► zone document read under the lock
//!        ─► Replace: pending_ver still ours (else Conflict)
//!        ─► serial = the apex's if it is after the document's, else
//!           document's + 1 (RFC 1982: never backwards)
//!        ─► change record (Merge) ─► one update: serial, gen (+ ver,
//!           old_vers += served ver, pending_ver unset: the switch)
//!        ─► Merge that moved the serial: its journal entry (merge_journal.rs)
//! ```

use super::merge_journal::{self, MergeJournal, MERGING};
use super::{Switched, WriteMode, ZoneWriter, LOCK_WAIT, OLD_VERSIONS};
use crate::lock::{Held, ZONE_LOCK};
use crate::schema::{self, int_field, node_id, ZoneInfo};
use crate::serial::{serial_gt, set_soa_serial, soa_serial};
use crate::store::{Store, StoreError};
use crate::RType;
use mongodb::bson::{doc, DateTime, Document};
use std::time::Duration;

/// What a publish under the lock did.
pub(super) struct Published {
    pub(super) serial: u32,
    pub(super) gen: i64,
    ver: i64,
    /// The version served before, when this publish switched away from it.
    old: Option<i64>,
}

fn conflict(text: String) -> StoreError {
    StoreError::Conflict(text)
}

impl ZoneWriter {
    /// `Replace`: `Err` (a conflict saying so) when another writer took
    /// over this writer's pending version: it began a version of its own
    /// and retired this one, which is deleted once that one is published.
    /// Signing a version taken over fails on its missing nodes; this says
    /// why.
    pub async fn ensure_still_pending(&self) -> Result<(), StoreError> {
        if self.mode != WriteMode::Replace {
            return Ok(());
        }
        let current = self
            .store
            .zones
            .find_one(doc! {"_id": self.zone.to_string()})
            .await?;
        match current.as_ref().and_then(|d| int_field(d, "pending_ver")) {
            Some(v) if v == self.ver() => Ok(()),
            _ => Err(self.taken_over()),
        }
    }

    /// The conflict of a replace whose pending version was taken over.
    fn taken_over(&self) -> StoreError {
        conflict(format!(
            "zone {}: another writer took over version {} before the switch; nothing was published",
            self.zone,
            self.ver()
        ))
    }

    /// `Merge`: acknowledges the batches written so far. Under the zone
    /// lock, if every one of them went into the version served now, a
    /// change record listing their names is stored and the zone's `gen`
    /// moves to it: from then on a switch by another writer either carries
    /// them (a signer catches up from change records) or supersedes them (a
    /// replace is the zone as of its switch). A batch that went into a
    /// version no longer served is written again into the served one first.
    pub(crate) async fn settle(&self) -> Result<(), StoreError> {
        let _one = self.settle_lock.lock().await;
        loop {
            let mut batches =
                std::mem::take(&mut *self.unsettled.lock().unwrap_or_else(|p| p.into_inner()));
            if batches.is_empty() {
                return Ok(());
            }
            let lock = self
                .store
                .lock(ZONE_LOCK, &self.zone, "merge", LOCK_WAIT)
                .await?;
            let served = self.served_ver().await;
            let served = match served {
                Ok(Some((v, before))) if batches.iter().all(|(bv, _)| *bv == v) => {
                    for (_, b) in &batches {
                        self.note_changed(b.iter().map(|n| &n.name));
                    }
                    let r = self.publish_gen().await;
                    if let Ok(gen) = r {
                        self.with_journal(|j| j.published(before, gen));
                    }
                    return lock.release_with(r.map(|_| ())).await;
                }
                Ok(Some((v, gen))) => {
                    *self.moved_gen.lock().unwrap_or_else(|p| p.into_inner()) = Some(gen);
                    // The batches go again into a version whose other
                    // changes this journal never saw.
                    self.with_journal(MergeJournal::spoil);
                    v
                }
                Ok(None) => {
                    return lock
                        .release_with(Err(conflict(format!(
                            "zone {} is no longer served (deleted, or being created anew); \
                             the merge stopped",
                            self.zone
                        ))))
                        .await
                }
                Err(e) => return lock.release_with(Err(e)).await,
            };
            lock.release().await?;
            tracing::info!(zone = %self.zone, ver = served,
                "another writer switched the zone while merging: batches written again into the version now served");
            self.ver.store(served, std::sync::atomic::Ordering::SeqCst);
            for (bv, b) in batches.iter_mut() {
                if *bv != served {
                    self.write_into(served, b).await?;
                    *bv = served;
                }
            }
            self.unsettled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(batches);
        }
    }

    /// `Merge` through a signer (which wrote into [`ZoneWriter::ver`]
    /// itself): acknowledges what it wrote, as `settle` does — under the
    /// zone lock, publishes the noted names if that version is still
    /// served and returns `None`; else returns the version served now (the
    /// caller signs its batch into it, then calls this again).
    pub async fn acknowledge_signed(&self) -> Result<Option<i64>, StoreError> {
        let lock = self
            .store
            .lock(ZONE_LOCK, &self.zone, "merge", LOCK_WAIT)
            .await?;
        let r = async {
            match self.served_ver().await? {
                Some((v, before)) if v == self.ver() => {
                    let gen = self.publish_gen().await?;
                    self.with_journal(|j| j.published(before, gen));
                    Ok(None)
                }
                Some((v, gen)) => {
                    *self.moved_gen.lock().unwrap_or_else(|p| p.into_inner()) = Some(gen);
                    self.ver.store(v, std::sync::atomic::Ordering::SeqCst);
                    Ok(Some(v))
                }
                None => Err(conflict(format!(
                    "zone {} is no longer served; the merge stopped",
                    self.zone
                ))),
            }
        }
        .await;
        lock.release_with(r).await
    }

    /// True once the caller said it signs what it writes.
    fn signs(&self) -> bool {
        self.signed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The served version and generation, read now (under the caller's
    /// lock); another merge being live spoils this writer's journal.
    async fn served_ver(&self) -> Result<Option<(i64, i64)>, StoreError> {
        let d = self
            .store
            .zones
            .find_one(doc! {"_id": self.zone.to_string()})
            .await?;
        if merge_journal::other_merge_live(d.as_ref(), self.merge_id.as_deref()) {
            self.with_journal(MergeJournal::spoil);
        }
        Ok(d.as_ref().and_then(|d| {
            let gen = int_field(d, "gen").unwrap_or(0);
            int_field(d, "ver").map(|v| (v, gen))
        }))
    }

    /// Under the lock: a new generation with its change record, `gen` moved.
    async fn publish_gen(&self) -> Result<i64, StoreError> {
        let gen = self.record_change().await?;
        let mut set = doc! {"updated": DateTime::now()};
        if let Some(id) = &self.merge_id {
            set.insert(format!("{MERGING}.{id}"), DateTime::now());
        }
        self.store
            .zones
            .update_one(
                doc! {"_id": self.zone.to_string()},
                doc! {"$max": {"gen": gen}, "$set": set},
            )
            .await?;
        Ok(gen)
    }

    /// Takes a new generation and, before any zone shows it, stores what
    /// it changed: the names written since the last publish (`Merge`), or
    /// "all" (`Replace`). Servers that find the record drop only those names
    /// from their record caches; without one they drop the whole zone.
    async fn record_change(&self) -> Result<i64, StoreError> {
        let names = match self.mode {
            WriteMode::Merge => self
                .changed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .replace(Vec::new()),
            WriteMode::Replace => None,
        };
        if self.mode != WriteMode::Merge {
            // A record saying "all": the generation is this zone's (its
            // `_id` is unique, where FerretDB's counter alone can hand one
            // value to two writers), and a server whose records account
            // for every generation reads only the zones they name.
            return self
                .store
                .take_generation_with(&self.zone, None, false)
                .await;
        }
        // Every batch was acknowledged with its names: an empty list is
        // "nothing else changed" (a last publish that moved nothing),
        // which a signer catching up can account for; `None` (a list
        // too long) still says "all".
        let names = names.map(|mut n| {
            n.sort();
            n.dedup();
            n
        });
        let signed = self.signed.load(std::sync::atomic::Ordering::Relaxed);
        self.store
            .take_generation_with(&self.zone, names.as_deref(), signed)
            .await
    }

    /// Publishes the write: fixes the SOA serial, bumps the generation and,
    /// for `Replace`, switches readers to the new version and, after
    /// `grace`, deletes the old one. Returns the zone as now served.
    pub async fn finish(self, grace: Duration) -> Result<ZoneInfo, StoreError> {
        let store = self.store.clone();
        let merge = self.mode == WriteMode::Merge;
        let switched = self.switch().await?;
        if merge {
            if let Err(e) = store.prune_changes(super::CHANGE_RECORDS_KEPT).await {
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
        self.settle().await?;
        let lock = self
            .store
            .lock(ZONE_LOCK, &self.zone, "switch", LOCK_WAIT)
            .await?;
        let r = self.publish_locked(true, None, Document::new()).await;
        let p = lock.release_with(r).await?;
        Ok(self.switched(p))
    }

    /// [`ZoneWriter::switch`] for a caller that holds the zone lock (a
    /// signer's fence): fails with [`StoreError::Conflict`] unless version
    /// `expect_served` is still the one served; `extra` fields are set in
    /// the same update (the zone's DNSSEC settings).
    pub async fn switch_under(
        self,
        _lock: &Held,
        expect_served: i64,
        extra: Document,
    ) -> Result<Switched, StoreError> {
        let p = self
            .publish_locked(true, Some(expect_served), extra)
            .await?;
        Ok(self.switched(p))
    }

    fn switched(self, p: Published) -> Switched {
        Switched {
            zone: ZoneInfo {
                apex: self.zone,
                ver: p.ver,
                gen: p.gen,
                serial: p.serial,
            },
            old: p.old,
        }
    }

    /// `Merge` only: makes what was merged so far official while the write
    /// goes on: the SOA serial moves forward and the zone gets a new `gen`,
    /// so servers drop what they cached. Returns the serial.
    pub async fn publish(&self) -> Result<u32, StoreError> {
        if self.mode != WriteMode::Merge {
            return Err(conflict(
                "publish is for Merge writes: a Replace write is published by finish".into(),
            ));
        }
        self.settle().await?;
        let lock = self
            .store
            .lock(ZONE_LOCK, &self.zone, "publish", LOCK_WAIT)
            .await?;
        let r = self.publish_locked(false, None, Document::new()).await;
        Ok(lock.release_with(r).await?.serial)
    }

    /// The publish itself; the caller holds the zone lock.
    pub(super) async fn publish_locked(
        &self,
        last: bool,
        expect_served: Option<i64>,
        extra: Document,
    ) -> Result<Published, StoreError> {
        let zone_id = self.zone.to_string();
        let current = self.store.zones.find_one(doc! {"_id": &zone_id}).await?;
        let served = current.as_ref().and_then(|d| int_field(d, "ver"));
        let pending = current.as_ref().and_then(|d| int_field(d, "pending_ver"));
        let switching = last && self.mode == WriteMode::Replace;
        // Under the lock: read any earlier, the served serial could move
        // past a signed new version's SOA meanwhile (the switch would then
        // move it, unsigned).
        let diff = match switching {
            true => self.diff_replaced().await,
            false => None,
        };
        let ver = self.version_to_publish(served, pending, switching, expect_served)?;
        let before = served
            .and(current.as_ref().and_then(|d| int_field(d, "serial")))
            .map(|s| s as u32);
        let serial = match before {
            // A writer that does not sign leaves the SOA of a secured zone
            // to the signer (which moves the serial when it signs what was
            // written): an unsigned serial bump would make the SOA bogus and
            // race with the signer's own.
            Some(b) if self.mode == WriteMode::Merge && !self.signs() && is_secured(&current) => b,
            _ => self.move_serial(ver, before).await?,
        };
        let gen = self.record_change().await?;
        let mut set = doc! {"serial": i64::from(serial), "updated": DateTime::now()};
        let mut unset = Document::new();
        let serial_moved = before != Some(serial);
        self.mark_merges(
            &mut set,
            &mut unset,
            current.as_ref(),
            gen,
            serial_moved,
            last,
        );
        set.extend(extra);
        let mut update = doc! {"$max": {"gen": gen}};
        let switch = Switch {
            served,
            ver,
            switching,
            last,
        };
        let old = switch.fields(&mut update, &mut unset, &mut set);
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        update.insert("$set", set);
        self.store
            .zones
            .update_one(doc! {"_id": &zone_id}, update)
            .upsert(true)
            .await?;
        let gen_before = current.as_ref().and_then(|d| int_field(d, "gen"));
        self.journal_merge(ver, gen_before.unwrap_or(0), gen, serial_moved)
            .await;
        if let Some(diff) = diff {
            self.journal_replace(diff, current.as_ref(), gen, ver).await;
        }
        Ok(Published {
            serial,
            gen,
            ver,
            old,
        })
    }

    /// The version a publish shows: a Replace's own (it must still be
    /// the pending one when it switches), a Merge's the one served. With
    /// `expect_served`, another writer's switch meanwhile is a conflict.
    fn version_to_publish(
        &self,
        served: Option<i64>,
        pending: Option<i64>,
        switching: bool,
        expect_served: Option<i64>,
    ) -> Result<i64, StoreError> {
        let zone_id = &self.zone;
        if let Some(e) = expect_served {
            if served != Some(e) {
                return Err(conflict(format!(
                    "zone {zone_id}: another writer switched it to version {} meanwhile; nothing was published",
                    served.map_or("none".into(), |v| v.to_string())
                )));
            }
        }
        match self.mode {
            WriteMode::Replace if switching && pending != Some(self.ver()) => {
                Err(self.taken_over())
            }
            WriteMode::Replace => Ok(self.ver()),
            // Every batch was settled into what is served now.
            WriteMode::Merge => served.ok_or_else(|| {
                conflict(format!(
                    "zone {zone_id} is no longer served; nothing was published"
                ))
            }),
        }
    }

    /// The zone document's merge fields: whether the content at the new
    /// serial is the content at `gen` (exact for a journal entry starting
    /// there, writer/journal.rs) or a merge goes on writing
    /// (merge_journal.rs), and this merge's own entry in MERGING.
    fn mark_merges(
        &self,
        set: &mut Document,
        unset: &mut Document,
        current: Option<&Document>,
        gen: i64,
        serial_moved: bool,
        last: bool,
    ) {
        let others = merge_journal::other_merge_live(current, self.merge_id.as_deref());
        if serial_moved {
            let merging = others || (self.merge_id.is_some() && !last);
            match merging {
                false => set.insert(super::SERIAL_GEN, gen),
                true => unset.insert(super::SERIAL_GEN, ""),
            };
        }
        if let Some(id) = &self.merge_id {
            match last {
                true => unset.insert(format!("{MERGING}.{id}"), ""),
                false => set.insert(format!("{MERGING}.{id}"), DateTime::now()),
            };
            if others {
                self.with_journal(MergeJournal::spoil);
            }
        }
    }

    /// `Merge` with a journal: the publish of `gen` (over the zone at
    /// `before`) is noted; when it moved the serial, the entry since the
    /// last move is stored (a failure only costs secondaries a full
    /// transfer, so it is logged, not returned).
    async fn journal_merge(&self, ver: i64, before: i64, gen: i64, serial_moved: bool) {
        if !serial_moved {
            self.with_journal(|j| j.published(before, gen));
            return;
        }
        if self.with_journal(|_| ()).is_none() {
            return;
        }
        let r = async {
            if self.with_journal(|j| j.imaged) == Some(true) {
                let images = self.images.lock().unwrap_or_else(|p| p.into_inner()).take();
                let diff = match images.filter(|i| i.ver() == ver) {
                    Some(images) => images.diff(&self.store).await?,
                    None => None,
                };
                self.with_journal(|j| j.fill(diff));
            }
            let Some(to_soa) = self.store.apex_soa_record(&self.zone, ver).await? else {
                self.with_journal(MergeJournal::spoil);
                return Ok(());
            };
            match self.with_journal(|j| j.take(before, gen, to_soa)).flatten() {
                Some(entry) => self.store.append_journal(&self.zone, &entry).await,
                None => Ok(()),
            }
        }
        .await;
        if let Err(e) = r {
            tracing::warn!(zone = %self.zone, error = %e, "the merge could not be journaled");
        }
    }

    /// Makes the apex SOA serial of version `ver` come after `before` (the
    /// serial served now, read under the lock): kept when it already does
    /// (a signer that moved and signed it), else `before + 1`.
    async fn move_serial(&self, ver: i64, before: Option<u32>) -> Result<u32, StoreError> {
        let apex_id = node_id(&self.zone, ver, &self.zone);
        let rdata = self.store.apex_soa(&apex_id).await?.ok_or_else(|| {
            conflict(format!(
                "zone {} has no SOA record at its apex; nothing was published",
                self.zone
            ))
        })?;
        let written =
            soa_serial(&rdata).ok_or_else(|| conflict("malformed SOA rdata at the apex".into()))?;
        let serial = match before {
            Some(b) if !serial_gt(written, b) => b.wrapping_add(1),
            _ => written,
        };
        if serial != written {
            let mut rdata = rdata;
            set_soa_serial(&mut rdata, serial);
            self.store
                .nodes
                .update_one(
                    doc! {"_id": &apex_id},
                    doc! {"$set": {"rrsets.SOA.rd": [schema::binary(&rdata)]}},
                )
                .await?;
        }
        if before != Some(serial) {
            // The served SOA changes, whoever wrote it (a signer that moved
            // and signed it did so in this version): caches must read the
            // apex again, so the change record lists it.
            self.note_changed(std::iter::once(&self.zone));
        }
        Ok(serial)
    }
}

/// True when the zone document says the zone is secured.
pub(super) fn is_secured(zone_doc: &Option<Document>) -> bool {
    zone_doc
        .as_ref()
        .and_then(|d| d.get_document("dnssec").ok())
        .and_then(|d| d.get_bool("secured").ok())
        .unwrap_or(false)
}

impl Store {
    /// The first SOA rdata of the node `apex_id`, if it has one.
    async fn apex_soa(&self, apex_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let apex = self.nodes.find_one(doc! {"_id": apex_id}).await?;
        let soa = apex
            .as_ref()
            .map(schema::node_from_doc)
            .transpose()?
            .and_then(|n| n.rrset(RType::SOA).cloned());
        Ok(soa.and_then(|s| s.rdata.first().map(|r| r.to_vec())))
    }
}

/// What a publish does to the served version.
struct Switch {
    /// The version served before it.
    served: Option<i64>,
    /// The version it shows.
    ver: i64,
    /// A Replace's last publish: it switches to `ver`.
    switching: bool,
    /// The writer's last publish.
    last: bool,
}

impl Switch {
    /// The update's switch fields; returns the version switched away from.
    fn fields(
        &self,
        update: &mut Document,
        unset: &mut Document,
        set: &mut Document,
    ) -> Option<i64> {
        if !self.switching {
            if self.last {
                unset.insert("resume", "");
            }
            return None;
        }
        set.insert("ver", self.ver);
        // A zone created again after a deletion is no tombstone now.
        unset.extend(
            doc! {"pending_ver": "", "resume": "", crate::schema::DELETED: "", crate::schema::LAST_VER: ""},
        );
        let prev = self.served.filter(|p| *p != self.ver)?;
        // Recorded in the switch itself: a writer killed right after it
        // leaves the old version listed for a later run to delete.
        update.insert("$addToSet", doc! {OLD_VERSIONS: prev});
        Some(prev)
    }
}
