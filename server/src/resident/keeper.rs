//! Keeping resident zones loaded and current.
//!
//! ```text
//!  ZoneRegistry ─ZoneEvent (before the new generation is served)─► hear()
//!     Changed, same version, names listed ─► slot.names += (from, to, names)
//!     Changed otherwise (replace, secure-zone, "all") ─► slot.reload
//!     Purged / AllPurged ─► copy voided at once, slot.reload
//!     Removed ─► copy and slot dropped
//!  POST /purge?name= (purge_name) ─► copies of the zones holding it voided, reloaded
//!  keeper loop (woken by hear, or every SWEEP):
//!     new zones in the registry (wanted) ─► slot.reload
//!     slot.names, chain from copy.gen ─► one point read per name
//!                                       ─► copy updated, copy.gen = to
//!     a gap in the chain ─► slot.reload
//!     grown past the budget or record limit, or a node the encoding cannot
//!     hold (node_codec.rs) ─► copy dropped, too_large
//!     slot.reload ─► one load at a time, in a task of its own:
//!        keyed_zone_cursor(version served now) ─► ZoneData (budget, max_records;
//!        a node the encoding cannot hold ─► too_large)
//!        (paced: every 4,096 nodes it waits, boundedly, while the answer
//!         path's reads queue for the database; pacing.rs)
//!        ─► installed with that version and generation; names heard
//!           meanwhile are applied after it
//! ```
//!
//! A copy answers for the version and generation the registry serves
//! (`ZoneCopy::serves`). Between a change and the copy's catching up (the
//! names applied, or the new version loaded), the copy still answers, as a
//! view of what it holds, for at most `--resident-lag-ms` after the first
//! change it missed (`answer_view`); past that the zone is on today's path,
//! and the old copy of a zone being loaded again is freed. With a lag of 0
//! a copy answers only when current and a reload frees it at once. A
//! database outage changes no generation: resident zones keep answering.

use super::copy::{ZoneCopy, ZoneData};
use super::pacing::{self, LoadPacing};
use super::status::{Residence, ResidentConfig};
use super::summary::{ResidencySummary, ZoneFigures};
use crate::zones::{ZoneEvent, ZoneRegistry};
use backend_mongo::resident::KeyedNode;
use backend_mongo::{Store, StoreError};
use dns::{Name, ZoneInfo};
use futures::{StreamExt, TryStreamExt};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How often the keeper looks for new zones and failed loads to retry.
const SWEEP: Duration = Duration::from_millis(250);

/// How long after a failed load it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Names read at once when a merge generation is applied.
const NAME_READS: usize = 16;

/// One merge generation of a zone: the names it wrote.
struct NameChange {
    from: i64,
    to: i64,
    names: Vec<Name>,
    /// When it was heard (a copy installed before it is behind since then).
    heard: Instant,
}

/// What the keeper knows of one wanted zone.
struct Slot {
    residence: Residence,
    /// A load runs now.
    loading: bool,
    /// Load the zone (again) as soon as no load runs.
    reload: bool,
    /// Merge generations heard and not applied yet, in order.
    names: Vec<NameChange>,
    /// Not before this (a failed load or update).
    retry_at: Option<Instant>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            residence: Residence::Loading,
            loading: false,
            reload: true,
            names: Vec::new(),
            retry_at: None,
        }
    }

    fn due(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|at| at <= now)
    }
}

/// Counters of residency.
#[derive(Default)]
pub struct ResidentCounters {
    /// Node and denial lookups answered from memory.
    pub lookups: AtomicU64,
    /// Lookups of a wanted zone whose copy was not current (today's path).
    pub passed_on: AtomicU64,
    /// Zone loads finished (installed).
    pub loads: AtomicU64,
    /// Zone loads that failed on a database fault.
    pub load_failures: AtomicU64,
    /// Names read again for merge generations.
    pub names_read: AtomicU64,
    /// Milliseconds zone loads waited for the answer path's reads
    /// (pacing.rs).
    pub load_paused_ms: AtomicU64,
    /// Point lookups answered from a copy catching up, of names no merge
    /// since its generation listed (pending.rs).
    pub unchanged: AtomicU64,
    /// Zone transfers (AXFR, and IXFR answered with the whole zone) sent
    /// from a copy (snapshot.rs).
    pub transfers: AtomicU64,
    /// Zone transfers that waited for a copy being loaded
    /// (transfer_wait.rs).
    pub transfer_waits: AtomicU64,
    /// Questions answered from a copy behind the served generation, within
    /// the lag allowed.
    pub lagging: AtomicU64,
    /// Plain questions answered in one step from a copy's bytes (plain.rs).
    pub plain_answers: AtomicU64,
}

/// The resident zones of a server and what keeps them current.
pub struct Residency {
    config: ResidentConfig,
    /// The copies by apex (read on every resident answer: a fast hash).
    copies: RwLock<HashMap<Name, Arc<ZoneCopy>, foldhash::fast::RandomState>>,
    slots: Mutex<HashMap<Name, Slot>>,
    wake: tokio::sync::Notify,
    /// A load runs (one at a time: on FerretDB each is a scan).
    loading: AtomicBool,
    /// The registry listened to (set by `start`).
    registry: std::sync::OnceLock<Arc<ZoneRegistry>>,
    /// When loads yield to the answer path (set by `start`).
    pacing: std::sync::OnceLock<LoadPacing>,
    /// Counters for `/stats`.
    pub counters: ResidentCounters,
}

impl Residency {
    /// Residency with `config` (nothing held yet).
    pub fn new(config: ResidentConfig) -> Arc<Residency> {
        Arc::new(Residency {
            config,
            copies: RwLock::new(HashMap::default()),
            slots: Mutex::new(HashMap::new()),
            wake: tokio::sync::Notify::new(),
            loading: AtomicBool::new(false),
            registry: std::sync::OnceLock::new(),
            pacing: std::sync::OnceLock::new(),
            counters: ResidentCounters::default(),
        })
    }

    /// The settings.
    pub fn config(&self) -> &ResidentConfig {
        &self.config
    }

    /// Which copy answers for `zone` (as the registry serves it, or a
    /// view from [`Residency::answer_view`]); for a point lookup of `name`,
    /// also a copy behind only by merges that did not list it.
    pub fn current(&self, zone: &ZoneInfo, name: Option<&Name>) -> CopyFor {
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        let Some(copy) = copies.get(&zone.apex) else {
            return CopyFor::None;
        };
        if copy.serves(zone) {
            CopyFor::Serves(copy.clone())
        } else if name.is_some_and(|n| copy.answers_unchanged(zone, n)) {
            self.counters.unchanged.fetch_add(1, Ordering::Relaxed);
            CopyFor::Serves(copy.clone())
        } else {
            self.counters.passed_on.fetch_add(1, Ordering::Relaxed);
            CopyFor::Other
        }
    }

    /// The copy holding exactly `zone` (its version and generation), if
    /// any; nothing counted.
    pub fn serving(&self, zone: &ZoneInfo) -> Option<Arc<ZoneCopy>> {
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        copies.get(&zone.apex).filter(|c| c.serves(zone)).cloned()
    }

    /// The zone `apex` as the registry serves it now, if known.
    pub fn served(&self, apex: &Name) -> Option<ZoneInfo> {
        let registry = self.registry.get()?;
        registry.state(apex).map(|s| s.info())
    }

    /// The zone as the answer path should read it: `zone` itself, or a
    /// view of its copy's own version and generation while the copy is
    /// behind by at most the configured lag (the copy then answers it,
    /// and its replies are not kept in the packet cache: their generation
    /// is already past).
    pub fn answer_view(&self, zone: ZoneInfo) -> ZoneInfo {
        if self.config.max_lag.is_zero() {
            return zone;
        }
        let Some(copy) = self.copy_of(&zone.apex) else {
            return zone;
        };
        match copy.lagging_view(&zone, self.config.max_lag) {
            Some(view) => {
                self.counters.lagging.fetch_add(1, Ordering::Relaxed);
                view
            }
            None => zone,
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<Name, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True while a transfer of `apex` should wait for its copy: a whole
    /// load of the version served runs or is due (not one that failed or
    /// found the zone too large), or the copy, loaded, still has merges to
    /// apply and is not current.
    pub(super) fn copy_coming(&self, apex: &Name) -> bool {
        let merges_pending = {
            let slots = self.slots();
            let Some(slot) = slots.get(apex) else {
                return false;
            };
            let load_due = slot.reload && slot.residence == Residence::Loading;
            if slot.loading || load_due {
                return true;
            }
            !slot.names.is_empty()
        };
        merges_pending && !self.copy_serves_now(apex)
    }

    /// True when the copy of `apex` holds what the registry serves now.
    fn copy_serves_now(&self, apex: &Name) -> bool {
        let served = self.served(apex);
        let copy = self.copy_of(apex);
        matches!((served, copy), (Some(zone), Some(copy)) if copy.serves(&zone))
    }

    fn copy_of(&self, apex: &Name) -> Option<Arc<ZoneCopy>> {
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        copies.get(apex).cloned()
    }

    /// Listens to `registry` and keeps the wanted zones loaded and current
    /// from `store`, until the runtime ends; loads yield to the answer
    /// path as `pacing` says.
    pub fn start(self: &Arc<Self>, registry: &Arc<ZoneRegistry>, store: Store, pacing: LoadPacing) {
        let _ = self.registry.set(registry.clone());
        let _ = self.pacing.set(pacing);
        let hearer = Arc::downgrade(self);
        registry.set_listener(Box::new(move |event| {
            if let Some(residency) = hearer.upgrade() {
                residency.hear(event);
            }
        }));
        tokio::spawn(self.clone().keep(registry.clone(), store));
    }

    /// A zone change, heard before the registry serves it.
    fn hear(&self, event: ZoneEvent<'_>) {
        match event {
            ZoneEvent::Changed { from, to, names } => {
                if !self.config.wants(&to.apex) {
                    return;
                }
                let mut slots = self.slots();
                let copy = self.copy_of(&to.apex);
                if let Some(copy) = &copy {
                    copy.mark_behind();
                }
                let slot = slots.entry(to.apex.clone()).or_insert_with(Slot::new);
                match names {
                    Some(names) if from.ver == to.ver => {
                        if let Some(copy) = copy.as_ref().filter(|c| c.ver == to.ver) {
                            copy.heard_merge(from.gen, to.gen, names);
                        }
                        slot.names.push(NameChange {
                            from: from.gen,
                            to: to.gen,
                            names: names.to_vec(),
                            heard: Instant::now(),
                        })
                    }
                    _ => slot.reload = true,
                }
            }
            ZoneEvent::Removed(apex) => {
                self.remove_copy(apex);
                self.slots().remove(apex);
            }
            ZoneEvent::Purged(apex) => {
                if let Some(copy) = self.copy_of(apex) {
                    copy.void();
                }
                if let Some(slot) = self.slots().get_mut(apex) {
                    slot.reload = true;
                }
            }
            ZoneEvent::AllPurged => {
                let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
                copies.values().for_each(|c| c.void());
                self.slots().values_mut().for_each(|s| s.reload = true);
            }
        }
        self.wake.notify_one();
    }

    /// `POST /purge?name=`: a name changed without a generation (a silent
    /// writer): the copies of the zones holding it are voided and loaded
    /// again. Returns how many.
    pub fn purge_name(&self, name: &Name) -> usize {
        let held: Vec<Name> = {
            let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
            copies
                .iter()
                .filter(|(apex, _)| name.ancestors().any(|a| a == **apex))
                .map(|(apex, copy)| {
                    copy.void();
                    apex.clone()
                })
                .collect()
        };
        let mut slots = self.slots();
        for apex in &held {
            if let Some(slot) = slots.get_mut(apex) {
                slot.reload = true;
            }
        }
        drop(slots);
        self.wake.notify_one();
        held.len()
    }

    /// The keeper loop (see the module documentation).
    async fn keep(self: Arc<Self>, registry: Arc<ZoneRegistry>, store: Store) {
        let mut seen_epoch = None;
        loop {
            let epoch = registry.zones_epoch();
            if seen_epoch != Some(epoch) {
                self.adopt_new_zones(&registry);
                seen_epoch = Some(epoch);
            }
            for (apex, changes) in self.take_name_changes() {
                self.apply_names(&store, &apex, changes).await;
            }
            self.free_expired_copies();
            if let Some(apex) = self.next_load() {
                let (keeper, registry, store) = (self.clone(), registry.clone(), store.clone());
                tokio::spawn(async move { keeper.load(&registry, &store, apex).await });
            }
            let _ = tokio::time::timeout(SWEEP, self.wake.notified()).await;
        }
    }

    /// Gives every wanted zone of the registry a slot (loaded when it can).
    fn adopt_new_zones(&self, registry: &ZoneRegistry) {
        let known = registry.known_zones();
        let mut slots = self.slots();
        for info in known.into_iter().filter(|z| self.config.wants(&z.apex)) {
            slots.entry(info.apex).or_insert_with(Slot::new);
        }
    }

    /// The merge generations to apply now: zones with a copy, not loading.
    fn take_name_changes(&self) -> Vec<(Name, Vec<NameChange>)> {
        let now = Instant::now();
        let mut slots = self.slots();
        slots
            .iter_mut()
            .filter(|(_, s)| !s.loading && !s.reload && !s.names.is_empty() && s.due(now))
            .map(|(apex, s)| (apex.clone(), std::mem::take(&mut s.names)))
            .collect()
    }

    /// Applies merge generations to the copy of `apex`, in order: one point
    /// read per listed name. A gap in the chain reloads the zone; a fault
    /// keeps the rest for a retry.
    async fn apply_names(&self, store: &Store, apex: &Name, changes: Vec<NameChange>) {
        let Some(copy) = self.copy_of(apex) else {
            return;
        };
        let mut rest = changes.into_iter();
        while let Some(change) = rest.next() {
            if change.to <= copy.gen() {
                continue; // the load already read it
            }
            if change.from != copy.gen() {
                self.mark_reload(apex);
                return;
            }
            match self.read_names(store, &copy, apex, &change.names).await {
                Ok(read) => {
                    let mut data = copy.write();
                    if !read
                        .into_iter()
                        .all(|(n, now)| data.replace_name(&n, now).is_ok())
                    {
                        drop(data);
                        self.evict(apex, "a node the resident encoding cannot hold");
                        return;
                    }
                    // Under the write lock: a reader sees data and
                    // generation agree (transfers rely on it).
                    copy.set_gen(change.to);
                    drop(data);
                    if self.evict_if_grown_too_large(apex, &copy) {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(zone = %apex, error = %e, "resident zone: reading changed names failed; will retry");
                    let mut slots = self.slots();
                    if let Some(slot) = slots.get_mut(apex) {
                        let mut kept: Vec<NameChange> =
                            std::iter::once(change).chain(rest).collect();
                        kept.append(&mut slot.names);
                        slot.names = kept;
                        slot.retry_at = Some(Instant::now() + RETRY_AFTER);
                    }
                    return;
                }
            }
        }
        self.note_if_caught_up(apex, &copy);
    }

    /// After merges grew the copy of `apex`: over the budget (with the
    /// other copies) or the record limit, it is dropped and the zone is
    /// marked too large (today's path until its next new version).
    fn evict_if_grown_too_large(&self, apex: &Name, copy: &ZoneCopy) -> bool {
        let records = copy.read().records();
        let over = self.bytes_held() > self.config.budget_bytes || self.config.too_many(records);
        if !over {
            return false;
        }
        tracing::info!(zone = %apex, records, "resident zone grew past the budget");
        self.evict(apex, "grown past the budget or the record limit");
        true
    }

    /// Drops the copy of `apex` and marks the zone too large: it is on the
    /// record cache's path (the database) until its next new version.
    fn evict(&self, apex: &Name, why: &str) {
        tracing::info!(zone = %apex, why, "resident zone dropped: back on the record cache's path");
        self.remove_copy(apex);
        if let Some(slot) = self.slots().get_mut(apex) {
            slot.residence = Residence::TooLarge;
            slot.names.clear();
        }
    }

    /// What the store holds now for each of `names` in the copy's version.
    async fn read_names(
        &self,
        store: &Store,
        copy: &ZoneCopy,
        apex: &Name,
        names: &[Name],
    ) -> Result<Vec<(Name, Vec<KeyedNode>)>, StoreError> {
        let zone = copy.zone_info(apex);
        let nsec3 = copy.read().has_nsec3();
        let zone = &zone;
        let read = futures::stream::iter(names.iter().cloned())
            .map(|name| async move {
                let now = store.keyed_nodes(zone, &name, nsec3).await?;
                Ok::<_, StoreError>((name, now))
            })
            .buffer_unordered(NAME_READS)
            .try_collect::<Vec<_>>()
            .await?;
        self.counters
            .names_read
            .fetch_add(names.len() as u64, Ordering::Relaxed);
        Ok(read)
    }

    /// Clears the copy's lag when nothing heard is left to apply (under
    /// the slots' lock, which `hear` marks it behind under).
    fn note_if_caught_up(&self, apex: &Name, copy: &ZoneCopy) {
        let slots = self.slots();
        let caught_up = slots
            .get(apex)
            .is_some_and(|s| s.names.is_empty() && !s.reload && !s.loading);
        if caught_up {
            copy.mark_caught_up();
        }
    }

    /// Frees the copies that have been behind for longer than the lag
    /// allowed while their zone waits to be loaded again (they will not
    /// answer again; a copy catching up by names is kept).
    fn free_expired_copies(&self) {
        let lag = self.config.max_lag;
        let slots = self.slots();
        let mut copies = self.copies.write().unwrap_or_else(|p| p.into_inner());
        copies.retain(|apex, copy| {
            let reloading = slots.get(apex).is_some_and(|s| s.reload || s.loading);
            !(reloading && copy.behind_for().is_some_and(|d| d > lag))
        });
    }

    fn remove_copy(&self, apex: &Name) {
        self.copies
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(apex);
    }

    fn mark_reload(&self, apex: &Name) {
        if let Some(slot) = self.slots().get_mut(apex) {
            slot.reload = true;
        }
    }

    /// The zone to load next, if no load runs; marks it loading.
    fn next_load(&self) -> Option<Name> {
        if self.loading.load(Ordering::Acquire) {
            return None;
        }
        let now = Instant::now();
        let mut slots = self.slots();
        let (apex, slot) = slots
            .iter_mut()
            .find(|(_, s)| s.reload && !s.loading && s.due(now))?;
        slot.reload = false;
        slot.loading = true;
        slot.residence = Residence::Loading;
        // Names heard before stay: those the load read are skipped after it.
        self.loading.store(true, Ordering::Release);
        Some(apex.clone())
    }

    /// Loads the version of `apex` served now, and installs it unless it
    /// is too large or a newer change asked for another load meanwhile.
    async fn load(&self, registry: &ZoneRegistry, store: &Store, apex: Name) {
        let started = Instant::now();
        if self.config.max_lag.is_zero() {
            // The old copy cannot answer again (its generation is past).
            self.remove_copy(&apex);
        }
        let outcome = match registry.state(&apex) {
            Some(state) => self.read_zone(store, &state.info()).await.map(Some),
            None => Ok(None),
        };
        let mut slots = self.slots();
        self.loading.store(false, Ordering::Release);
        let Some(slot) = slots.get_mut(&apex) else {
            return; // removed meanwhile
        };
        slot.loading = false;
        match outcome {
            Ok(Some(Loaded::Whole(info, data))) if !slot.reload => {
                tracing::info!(zone = %apex, records = data.records(), bytes = data.bytes(),
                    took_ms = started.elapsed().as_millis() as u64, "zone resident");
                slot.residence = Residence::Resident;
                let copy = Arc::new(ZoneCopy::new(info.ver, info.gen, data));
                if let Some(first) = slot.names.first() {
                    // Heard before the load ended, applied next: behind since.
                    copy.mark_behind_at(first.heard);
                }
                for change in &slot.names {
                    copy.heard_merge(change.from, change.to, &change.names);
                }
                self.copies
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(apex, copy);
                self.counters.loads.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Some(Loaded::Whole(..))) => {} // changed meanwhile: loaded again
            Ok(Some(Loaded::TooLarge { records, bytes })) => {
                tracing::info!(zone = %apex, records, bytes, "zone too large to be resident");
                slot.residence = Residence::TooLarge;
                self.remove_copy(&apex);
            }
            Ok(None) => {
                // Not known to the registry right now (after a full purge,
                // until it is loaded again): try again shortly.
                slot.reload = true;
                slot.retry_at = Some(Instant::now() + SWEEP);
            }
            Err(e) => {
                tracing::warn!(zone = %apex, error = %e, "resident zone: load failed; will retry");
                self.counters.load_failures.fetch_add(1, Ordering::Relaxed);
                slot.residence = Residence::Failed;
                slot.reload = true;
                slot.retry_at = Some(Instant::now() + RETRY_AFTER);
            }
        }
        drop(slots);
        self.wake.notify_one();
    }

    /// Reads every node of `info`'s version, stopping once over the budget.
    /// The zone's old copy (still answering within the lag) counts against
    /// the budget until the new one would not fit beside it: then it is
    /// freed, and the zone is on today's path until the load completes.
    async fn read_zone(&self, store: &Store, info: &ZoneInfo) -> Result<Loaded, StoreError> {
        let old = self.copy_of(&info.apex).map_or(0, |c| c.read().bytes());
        let room = self
            .config
            .budget_bytes
            .saturating_sub(self.bytes_held_except(&info.apex));
        let mut old = (old > 0).then_some(old);
        let mut stream = store.keyed_zone_cursor(info).await?;
        let mut data = ZoneData::default();
        let pacing = self.pacing.get().cloned().unwrap_or_default();
        let mut read = 0usize;
        while let Some(node) = stream.next().await {
            if data.insert(node?).is_err() {
                tracing::info!(zone = %info.apex, "a node the resident encoding cannot hold (over 65,535 records in an RRset): the zone is answered from the database");
                return Ok(too_large(&data));
            }
            read += 1;
            if read.is_multiple_of(pacing::STEP) {
                let waited = pacing.pace().await.as_millis() as u64;
                self.counters
                    .load_paused_ms
                    .fetch_add(waited, Ordering::Relaxed);
            }
            if old.is_some_and(|old| data.bytes() + old > room) {
                self.remove_copy(&info.apex);
                old = None;
            }
            if data.bytes() > room || self.config.too_many(data.records()) {
                return Ok(too_large(&data));
            }
        }
        Ok(Loaded::Whole(info.clone(), data))
    }

    /// Bytes the copies of every zone but `apex` hold.
    fn bytes_held_except(&self, apex: &Name) -> usize {
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        copies
            .iter()
            .filter(|(a, _)| *a != apex)
            .map(|(_, c)| c.read().bytes())
            .sum()
    }

    /// Bytes all copies hold.
    pub fn bytes_held(&self) -> usize {
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        copies.values().map(|c| c.read().bytes()).sum()
    }

    /// Every wanted zone's residency summed, with the `top` largest zones
    /// on their own (summary.rs): no allocation per zone beyond those.
    pub fn summary(&self, top: usize) -> ResidencySummary {
        let slots = self.slots();
        let copies = self.copies.read().unwrap_or_else(|p| p.into_inner());
        let mut summary = ResidencySummary::new(top);
        for (apex, slot) in slots.iter() {
            let copy = copies.get(apex);
            let (bytes, records) = copy.map_or((0, 0), |c| {
                let data = c.read();
                (data.bytes(), data.records())
            });
            let current =
                copy.is_some_and(|c| c.gen() != i64::MIN) && slot.names.is_empty() && !slot.reload;
            let figures = ZoneFigures {
                residence: slot.residence,
                current,
                bytes,
                records,
            };
            summary.add(apex, figures);
        }
        drop((copies, slots));
        summary.finish()
    }
}

/// A load given up: the zone is too large to hold (what was read, counted).
fn too_large(data: &ZoneData) -> Loaded {
    Loaded::TooLarge {
        records: data.records(),
        bytes: data.bytes(),
    }
}

#[cfg(test)]
impl Residency {
    /// Sets the slot of `apex` as a load would (tests of what waits on it).
    pub(super) fn set_slot_for_test(&self, apex: &Name, loading: bool, residence: Residence) {
        let mut slots = self.slots();
        let slot = slots.entry(apex.clone()).or_insert_with(Slot::new);
        slot.loading = loading;
        slot.reload = false;
        slot.residence = residence;
    }
}

/// Which copy answers for a zone.
pub enum CopyFor {
    /// This one: it holds exactly that version and generation.
    Serves(Arc<ZoneCopy>),
    /// The zone has a copy, of another version or generation (a view of
    /// an older one, or one catching up): ask the registry what it serves.
    Other,
    /// No copy: today's path as asked.
    None,
}

/// What a load read.
enum Loaded {
    /// The whole version, for the zone as it was when the load began.
    Whole(ZoneInfo, ZoneData),
    /// More than the budget or the record limit allows (what was read
    /// before stopping).
    TooLarge { records: usize, bytes: usize },
}
