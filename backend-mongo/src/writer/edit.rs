//! Editing single records of a served zone: a change-set is one
//! generation, one change record and one serial bump.
//!
//! ```text
//!  Store::edit_zone(zone, edits) = begin_edit(ChangeSet), then publish
//!  begin_edit: [zone lock] the zone served? (version V, secured?)
//!     ─► each name edited: one point read in V (a signed edit's new names
//!        the signer's chain shows absent: none) ─► NodeEdit::apply, in order
//!     ─► an RRset grown past what one message holds ─► TooLarge, nothing written
//!     ─► an intent change record: the names the writes may touch (a writer
//!        killed before its publish leaves it for signers and servers)
//!     ─► names gaining data: missing ancestors upserted as empty non-terminals
//!     ─► begin_signed_edit: names not stored are not written but handed to
//!        the signer (ZoneEdit::take_new_nodes), which inserts each whole,
//!        signed, once
//!     (the writes below: edit_writes.rs)
//!     ─► per name: $pullAll, then $set / $unset / $addToSet of its RRsets
//!        (a set emptied by a $pullAll is unset only while it is still empty)
//!     ─► names left empty: deleted unless names exist below them (then
//!        an empty non-terminal); ancestors left childless and empty too
//!     (a caller holding the signing lease signs ZoneEdit::names here)
//!  publish: serial (the SOA edited to a later one, else served + 1), change
//!        record listing every name written, gen ─► [unlock]
//!     nothing written: nothing published, no new generation
//! ```
//!
//! Held under the zone lock from the read to the publish, so change-sets
//! apply one after another and no switch falls between their read and
//! their write. Records are written as set operations: a merge writing the
//! same RRset at the same moment keeps its records (docs/schema.md,
//! "Concurrency"). In a secured zone nothing here signs: the change record
//! hands the names to the signer (`mongodns-sign` signs them, or the
//! caller does, holding the signing lease).

use super::{NodeImages, NodeWrite, WriteMode, ZoneWriter, LOCK_WAIT};
use crate::dnssec_store::FullNode;
use crate::lock::{Held, ZONE_LOCK};
use crate::schema::{self, RRset, ZoneInfo};
use crate::store::{Store, StoreError};
use crate::Name;
use dns::edit::{
    check_prerequisites, ChangeSet, Edited, NodeEdit, Prerequisite, RecordEdit, Unmet, WhenIgnored,
};
use dns::journal::{record_changes, JournalEntry, JournalRecord};
use mongodb::bson::{doc, Document};
use std::collections::{BTreeMap, BTreeSet};

/// What [`Store::edit_zone`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditSummary {
    /// One outcome per edit, in the order given.
    pub outcomes: Vec<Edited>,
    /// The zone's serial after the change-set.
    pub serial: u32,
    /// The generation published; `None` when nothing changed.
    pub gen: Option<i64>,
    /// Owner names written (edited names, empty non-terminals added or
    /// removed, the apex when its SOA moved).
    pub names: Vec<Name>,
    /// The version edited.
    pub ver: i64,
    /// The prerequisite that failed, if one did: then nothing was written.
    pub unmet: Option<Unmet>,
    /// The generation of the change record written before anything else,
    /// listing the names the change-set may touch (none when it wrote
    /// nothing).
    pub intent_gen: Option<i64>,
}

/// A change-set written and not yet published, holding the zone lock
/// (see [`Store::begin_edit`]).
pub struct ZoneEdit {
    store: Store,
    lock: Option<Held>,
    writer: ZoneWriter,
    served: ZoneInfo,
    outcomes: Vec<Edited>,
    written: Vec<Name>,
    secured: bool,
    unmet: Option<Unmet>,
    /// What the edits removed and added, for the journal (unsigned zones).
    changes: Option<(Vec<JournalRecord>, Vec<JournalRecord>)>,
    /// The generation the zone's serial last moved at, as read.
    serial_gen: Option<i64>,
    /// Secured zones: the nodes' before-images, for the journal (lent to
    /// the signer while it signs, see [`ZoneEdit::take_images`]).
    images: Option<NodeImages>,
    /// Secured zones: the apex SOA before the change-set.
    soa_before: Option<JournalRecord>,
    /// A signer signed the change-set ([`ZoneEdit::note_signed`]).
    signed: bool,
    /// The names the change-set adds that were not stored, left for the
    /// signer to write whole ([`Store::begin_signed_edit`]).
    new_nodes: Vec<NodeWrite>,
    /// The generation of the intent change record.
    intent_gen: Option<i64>,
}

impl ZoneEdit {
    /// The owner names written so far (edited names and empty
    /// non-terminals added), for a signer to sign before the publish.
    pub fn names(&self) -> &[Name] {
        &self.written
    }

    /// The version edited (the one served).
    pub fn ver(&self) -> i64 {
        self.served.ver
    }

    /// The serial served before this change-set.
    pub fn served_serial(&self) -> u32 {
        self.served.serial
    }

    /// True when the zone is secured (its signer owns the chain).
    pub fn secured(&self) -> bool {
        self.secured
    }

    /// The prerequisite that failed, if one did (nothing was written).
    pub fn unmet(&self) -> Option<&Unmet> {
        self.unmet.as_ref()
    }

    /// One outcome per edit, in the order given.
    pub fn outcomes(&self) -> &[Edited] {
        &self.outcomes
    }

    /// The names the change-set adds that were not stored when read, with
    /// their records, left unwritten for the caller to write signed
    /// ([`Store::begin_signed_edit`]); from now on they count as written
    /// (listed in the change record). Empty for [`Store::begin_edit`].
    pub fn take_new_nodes(&mut self) -> Vec<NodeWrite> {
        let new = std::mem::take(&mut self.new_nodes);
        self.written.extend(new.iter().map(|w| w.name.clone()));
        new
    }

    /// The caller signed what was written: `names` are the owners its
    /// signer wrote (chain neighbours, NSEC3 owners, the apex with its
    /// signed SOA), listed in the change record, which says signed.
    pub fn note_signed(&mut self, names: &[Name]) {
        self.writer.note_signed(names.iter());
        self.written.extend(names.iter().cloned());
        self.signed = true;
    }

    /// Secured zones: the before-images of what the change-set wrote, for
    /// a signer to add what it writes to ([`NodeImages::capture_changes`])
    /// and give back with [`ZoneEdit::put_images`]; the signed change is
    /// then journaled. Not given back: no journal entry.
    pub fn take_images(&mut self) -> Option<NodeImages> {
        self.images.take()
    }

    /// Gives the images back after signing (see [`ZoneEdit::take_images`]).
    pub fn put_images(&mut self, images: Option<NodeImages>) {
        self.images = images;
    }

    /// Publishes the change-set: the
    /// serial moves (unless the zone is secured and nobody signed), one
    /// change record lists every name written, `gen` moves to it. Releases
    /// the zone lock. Publishes nothing when nothing was written.
    pub async fn publish(mut self) -> Result<EditSummary, StoreError> {
        let lock = self.lock.take();
        let r = self.publish_locked().await;
        match lock {
            Some(l) => l.release_with(r).await,
            None => r,
        }
    }

    async fn publish_locked(&mut self) -> Result<EditSummary, StoreError> {
        let (zone, ver) = (self.served.apex.clone(), self.served.ver);
        if self.written.is_empty() {
            return Ok(self.summary(self.served.serial, None));
        }
        self.writer.note_changed(self.written.iter());
        let t = std::time::Instant::now();
        let from_soa = self.apex_soa().await?;
        let published = self
            .writer
            .publish_locked(false, Some(ver), Document::new())
            .await?;
        let published_in = t.elapsed();
        if let Err(e) = self.journal(from_soa, published.gen).await {
            // The change is in; a secondary behind it gets the whole zone.
            tracing::warn!(%zone, error = %e, "the change could not be journaled");
        }
        tracing::debug!(%zone, names = self.written.len(), ?published_in,
            journaled_in = ?t.elapsed(), "change-set published");
        if published.serial != self.served.serial {
            // The SOA moved: the publish listed the apex too.
            self.written.push(zone.clone());
        }
        if published.gen % 128 == 0 {
            if let Err(e) = self.store.prune_changes(super::CHANGE_RECORDS_KEPT).await {
                tracing::debug!(error = %e, "old change records not pruned");
            }
        }
        Ok(self.summary(published.serial, Some(published.gen)))
    }

    /// The apex SOA as stored now.
    async fn apex_soa(&self) -> Result<Option<JournalRecord>, StoreError> {
        let apex = &self.served.apex;
        self.store.apex_soa_record(apex, self.served.ver).await
    }

    /// Journals the published change (generation `gen`) for IXFR. In a
    /// secured zone only a signed change-set is, from the before-images of
    /// every node it and its signer wrote (RRSIGs and chain included).
    async fn journal(
        &mut self,
        from_soa: Option<JournalRecord>,
        gen: i64,
    ) -> Result<(), StoreError> {
        let (changes, from_soa) = match (self.secured, self.images.take()) {
            (true, Some(images)) if self.signed => {
                (images.diff(&self.store).await?, self.soa_before.take())
            }
            (true, _) => return Ok(()),
            (false, _) => (self.changes.take(), from_soa),
        };
        let (Some((removed, added)), Some(from_soa)) = (changes, from_soa) else {
            return Ok(());
        };
        let Some(to_soa) = self.apex_soa().await? else {
            return Ok(());
        };
        // A merge that began meanwhile may have written batches before
        // this publish (it lists itself before its first write).
        let now = self
            .store
            .zones
            .find_one(doc! {"_id": self.served.apex.to_string()})
            .await?;
        let entry = JournalEntry {
            gen,
            base_gen: self.served.gen,
            exact: self.serial_gen == Some(self.served.gen) && !super::merge_live(now.as_ref()),
            from_soa,
            to_soa,
            removed,
            added,
        };
        self.store.append_journal(&self.served.apex, &entry).await
    }

    fn summary(&mut self, serial: u32, gen: Option<i64>) -> EditSummary {
        let mut names = std::mem::take(&mut self.written);
        names.sort();
        names.dedup();
        EditSummary {
            outcomes: std::mem::take(&mut self.outcomes),
            serial,
            gen,
            names,
            ver: self.served.ver,
            unmet: self.unmet.take(),
            intent_gen: self.intent_gen,
        }
    }
}

/// Every record the changed names lost and gained.
fn journal_changes(changed: &[&Pending]) -> (Vec<JournalRecord>, Vec<JournalRecord>) {
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for p in changed {
        let (r, a) = record_changes(p.edit.name(), p.edit.before(), p.edit.after());
        removed.extend(r);
        added.extend(a);
    }
    (removed, added)
}

/// Every name the writes of `changed` may touch: the edited names and
/// their ancestors below the apex. Before anything is written, a change
/// record lists them at a generation of its own (the intent): a writer
/// killed before its publish leaves it behind, so whoever reads the records
/// past it (a signer catching up, a server) still learns of those names; a
/// re-run finds nothing left to do and publishes nothing.
fn touched_names(zone: &Name, changed: &[&Pending]) -> Vec<Name> {
    let mut names: Vec<Name> = changed
        .iter()
        .flat_map(|p| p.edit.name().ancestors().take_while(|a| a != zone))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// One name being edited: what was stored, and the edit in memory.
pub(super) struct Pending {
    pub(super) existed: bool,
    pub(super) edit: NodeEdit,
    /// The node as read (secured zones: its before-image).
    pub(super) stored: Option<FullNode>,
}

impl Store {
    /// Applies `edits` to the served version of `zone` as one change-set
    /// (see the module documentation). Edits outside the zone fail the
    /// whole change-set before anything is written. In a secured zone the
    /// edited names are left to the signer ([`Store::begin_edit`] lets a
    /// caller holding the signing lease sign them before the publish).
    pub async fn edit_zone(
        &self,
        zone: &Name,
        edits: &[RecordEdit],
    ) -> Result<EditSummary, StoreError> {
        let change = ChangeSet::new(zone.clone(), edits.to_vec());
        self.begin_edit(&change, None).await?.publish().await
    }

    /// The first half of [`Store::edit_zone`]: takes the zone lock, reads
    /// and edits the names and writes them, unpublished. The caller may
    /// sign what was written (see [`ZoneEdit::names`]), then calls
    /// [`ZoneEdit::publish`]; dropping it releases the lock and publishes
    /// nothing (servers that read the edited names from the database may
    /// already see them: the write is not undone). With `expect_ver`, fails
    /// with [`StoreError::Conflict`] before writing unless that version is
    /// the one served (a signer that read its chain before). An edit the
    /// rules leave out ([`Edited::Ignored`]) is skipped, or with
    /// [`WhenIgnored::ApplyNothing`] makes the whole change-set write nothing.
    pub async fn begin_edit(
        &self,
        change: &ChangeSet,
        expect_ver: Option<i64>,
    ) -> Result<ZoneEdit, StoreError> {
        self.begin(change, expect_ver, None).await
    }

    /// [`Store::begin_edit`] for a signer holding the signing lease of
    /// version `ver`, served: names the change-set adds that were not
    /// stored are not written but left to it ([`ZoneEdit::take_new_nodes`]),
    /// to be written once, whole and signed. `absent` are names the
    /// signer's chain shows are not stored: a name there whose edits all
    /// add records is not read (its insert finds it if it was stored after
    /// all), nor is such an ancestor of a new name.
    pub async fn begin_signed_edit(
        &self,
        change: &ChangeSet,
        ver: i64,
        absent: &BTreeSet<Name>,
    ) -> Result<ZoneEdit, StoreError> {
        self.begin(change, Some(ver), Some(absent)).await
    }

    /// `signed`: a signed edit's absent names (see
    /// [`Store::begin_signed_edit`]).
    async fn begin(
        &self,
        change: &ChangeSet,
        expect_ver: Option<i64>,
        signed: Option<&BTreeSet<Name>>,
    ) -> Result<ZoneEdit, StoreError> {
        let zone = &change.zone;
        if let Some(n) = change.outside_zone() {
            return Err(StoreError::Conflict(format!(
                "{n} is not in zone {zone}; nothing was changed"
            )));
        }
        let lock = self.lock(ZONE_LOCK, zone, "edit", LOCK_WAIT).await?;
        match self.edit_locked(change, expect_ver, signed).await {
            Ok(mut edit) => {
                edit.lock = Some(lock);
                Ok(edit)
            }
            Err(e) => lock.release_with(Err(e)).await,
        }
    }

    /// The edit itself; the caller holds the zone lock.
    ///
    /// ```text
    ///  open_served_version ─► prerequisites ─► apply_in_memory
    ///  ─► a generation for the touched names ─► before-images (secured) or
    ///  journal changes ─► write_changed
    /// ```
    async fn edit_locked(
        &self,
        change: &ChangeSet,
        expect_ver: Option<i64>,
        signed: Option<&BTreeSet<Name>>,
    ) -> Result<ZoneEdit, StoreError> {
        let absent = signed.cloned().unwrap_or_default();
        let zone = &change.zone;
        let mut edit = self.open_served_version(zone, expect_ver).await?;
        let ver = edit.served.ver;
        if let Err(unmet) = self
            .check_prerequisites(zone, ver, &change.prerequisites)
            .await?
        {
            edit.unmet = Some(unmet);
            return Ok(edit);
        }
        let t = std::time::Instant::now();
        let (names, outcomes) = self
            .apply_in_memory(zone, ver, &change.edits, edit.secured, &absent)
            .await?;
        let t_read = t.elapsed();
        if let Some(why) = names.values().find_map(|p| p.edit.too_large()) {
            return Err(StoreError::TooLarge(why));
        }
        let refused = outcomes.iter().any(|o| matches!(o, Edited::Ignored(_)));
        edit.outcomes = outcomes;
        if refused && change.when_ignored == WhenIgnored::ApplyNothing {
            return Ok(edit);
        }
        // A name that did not exist and ends empty (added, then deleted) is
        // not written at all.
        let changed: Vec<&Pending> = names
            .values()
            .filter(|p| !p.edit.writes().is_empty() && (p.existed || !p.edit.is_empty()))
            .collect();
        let touched = touched_names(zone, &changed);
        if !changed.is_empty() {
            let gen = self.take_generation_with(zone, Some(&touched), false);
            edit.intent_gen = Some(gen.await?);
        }
        if edit.secured {
            let edited = changed.iter().map(|p| p.edit.name().clone());
            let imaged: Vec<Name> = touched.iter().cloned().chain(edited).collect();
            let mut images = NodeImages::new(zone, ver, edit.served.gen);
            images.note_read(changed.iter().map(|p| (p.edit.name(), p.stored.as_ref())));
            images.capture_names(self, &imaged).await?;
            edit.images = Some(images);
            edit.soa_before = self.apex_soa_record(zone, ver).await?;
        } else {
            edit.changes = Some(journal_changes(&changed));
        }
        let t_images = t.elapsed();
        let defer = signed.is_some() && edit.secured;
        let (new, now): (Vec<&Pending>, Vec<&Pending>) = changed
            .iter()
            .partition(|p| defer && !p.existed && !p.edit.is_empty());
        edit.new_nodes = new
            .iter()
            .map(|p| NodeWrite {
                name: p.edit.name().clone(),
                rrsets: p.edit.after().to_vec(),
            })
            .collect();
        edit.written = self.add_ancestors(zone, ver, &new, &absent).await?;
        edit.written
            .extend(self.write_changed(zone, ver, &now).await?);
        tracing::debug!(%zone, names = changed.len(), read = ?t_read, imaged = ?t_images,
            written = ?t.elapsed(), "change-set written");
        Ok(edit)
    }

    /// An edit of the version of `zone` served now (which must be
    /// `expect_ver` when given), nothing applied yet.
    async fn open_served_version(
        &self,
        zone: &Name,
        expect_ver: Option<i64>,
    ) -> Result<ZoneEdit, StoreError> {
        let current = self.zones.find_one(doc! {"_id": zone.to_string()}).await?;
        let served = match &current {
            Some(d) if d.contains_key("ver") => schema::zone_from_doc(d)?,
            _ => return Err(StoreError::NoSuchZone(zone.to_string())),
        };
        let secured = current
            .as_ref()
            .and_then(|d| d.get_document("dnssec").ok())
            .and_then(|d| d.get_bool("secured").ok())
            .unwrap_or(false);
        let ver = served.ver;
        if expect_ver.is_some_and(|v| v != ver) {
            return Err(StoreError::Conflict(format!(
                "zone {zone}: another writer switched it to version {ver} meanwhile; nothing was changed"
            )));
        }
        let writer = ZoneWriter::new(
            self,
            zone,
            ver,
            WriteMode::Merge,
            None,
            None,
            Some(Vec::new()),
        );
        Ok(ZoneEdit {
            store: self.clone(),
            lock: None,
            writer,
            served,
            outcomes: Vec::new(),
            written: Vec::new(),
            secured,
            unmet: None,
            changes: None,
            serial_gen: current
                .as_ref()
                .and_then(|d| schema::int_field(d, super::SERIAL_GEN)),
            images: None,
            soa_before: None,
            signed: false,
            new_nodes: Vec::new(),
            intent_gen: None,
        })
    }

    /// Reads the names the prerequisites are about and checks them.
    async fn check_prerequisites(
        &self,
        zone: &Name,
        ver: i64,
        prerequisites: &[Prerequisite],
    ) -> Result<Result<(), Unmet>, StoreError> {
        let nodes = self
            .read_named_nodes(zone, ver, prerequisites.iter().map(|p| p.name()))
            .await?;
        let stored: BTreeMap<Name, Vec<RRset>> = nodes
            .into_iter()
            .map(|(name, node)| {
                let rrsets = node.map(|n| n.rrsets.into_iter().map(|s| s.rrset).collect());
                (name, rrsets.unwrap_or_default())
            })
            .collect();
        Ok(check_prerequisites(prerequisites, &stored))
    }

    /// Reads each edited name once (not those `absent` whose edits all add
    /// records) and applies its edits in order.
    async fn apply_in_memory(
        &self,
        zone: &Name,
        ver: i64,
        edits: &[RecordEdit],
        secured: bool,
        absent: &BTreeSet<Name>,
    ) -> Result<(BTreeMap<Name, Pending>, Vec<Edited>), StoreError> {
        let mut names: BTreeMap<Name, Pending> = BTreeMap::new();
        let mut outcomes = Vec::with_capacity(edits.len());
        let removes: BTreeSet<&Name> = edits
            .iter()
            .filter(|e| !matches!(e, RecordEdit::Add { .. }))
            .map(|e| e.name())
            .collect();
        let unread = |n: &Name| absent.contains(n) && !removes.contains(n);
        let mut stored = self
            .read_named_nodes(
                zone,
                ver,
                edits.iter().map(|e| e.name()).filter(|n| !unread(n)),
            )
            .await?;
        for e in edits {
            if !names.contains_key(e.name()) {
                let stored = stored.remove(e.name()).flatten();
                let existed = stored.is_some();
                let rrsets: Vec<RRset> = stored
                    .iter()
                    .flat_map(|n| n.rrsets.iter().map(|s| s.rrset.clone()))
                    .collect();
                let edit = NodeEdit::new(zone, e.name(), rrsets, secured);
                let stored = stored.filter(|_| secured);
                let pending = Pending {
                    existed,
                    edit,
                    stored,
                };
                names.insert(e.name().clone(), pending);
            }
            let p = names.get_mut(e.name()).expect("inserted above");
            outcomes.push(p.edit.apply(e));
        }
        Ok((names, outcomes))
    }

    /// The nodes of `names` (each read once, the reads in flight together)
    /// as stored in version `ver`.
    async fn read_named_nodes<'a>(
        &self,
        zone: &Name,
        ver: i64,
        names: impl Iterator<Item = &'a Name>,
    ) -> Result<BTreeMap<Name, Option<FullNode>>, StoreError> {
        let mut unique: Vec<Name> = names.cloned().collect();
        unique.sort();
        unique.dedup();
        let read = self.read_full_nodes(zone, ver, &unique).await?;
        Ok(unique.into_iter().zip(read).collect())
    }
}
