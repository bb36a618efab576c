//! `resign --follow`: keeps a secured zone signed while other writers
//! change it, reading only what they changed.
//!
//! ```text
//!  every interval: zones.find_one(_id) ─► gen moved?
//!   ├─ first run, new version, every --full-every (an hour), or changes
//!   │  not accounted for
//!   │     ─► full re-sign (resign: reads the whole version; the chain
//!   │        copy is taken from what it wrote)
//!   └─ else change records of gen+1..=G (one _id read each)
//!        ├─ our own publishes ─► skipped
//!        ├─ other signers' (signed: true) ─► nothing to sign; our chain
//!        │                                   copy is stale: dropped
//!        └─ unsigned writers' names ─► MergeSigner::resign_names (point
//!              reads of those names; chain copy kept between polls) ─► SOA serial + 1, signed ─► publish_in_place with
//!              the names written (a signed record, remembered as ours)
//! ```
//!
//! A full re-sign is always correct; the incremental path is taken only
//! when every generation in between is explained (a record of this zone,
//! or another zone now sitting at that generation).

use crate::catchup::records_since;
use crate::merge::MergeSigner;
use crate::plan::{KeySet, SignOptions};
use crate::refresh::refresh_due;
use crate::{resign_version, NoProgress, PlanStats, Progress, Report, SignError, Validity};
use backend_mongo::{Store, StoreError};
use dns::{Name, ZoneInfo};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The lease holder's name of `resign --follow` (writers that find it
/// holding the lease leave their names to it at once).
pub(crate) const FOLLOWER: &str = "resign --follow";

/// What changed between two polls, by the change records.
#[derive(Debug, Default)]
struct Since {
    /// Names that writers which do not sign changed.
    unsigned: Vec<Name>,
    /// Another signer wrote (our copy of the chain may be stale).
    signed_elsewhere: bool,
}

/// The names changed in `zone` from generation `from` to `to` (exclusive,
/// inclusive), or `None` when the records do not account for every
/// generation in between (a replace, a writer without records, a record
/// saying "all", records pruned, too many generations).
async fn changes_since(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
    ours: &HashSet<i64>,
) -> Result<Option<Since>, StoreError> {
    if to <= from {
        return Ok(None);
    }
    let Some(records) = records_since(store, zone, from, to).await? else {
        return Ok(None);
    };
    let mut since = Since::default();
    for (gen, r) in records {
        if ours.contains(&gen) {
            continue;
        }
        if r.signed {
            since.signed_elsewhere = true;
            continue;
        }
        since.unsigned.extend(r.names.unwrap_or_default());
    }
    Ok(Some(since))
}

/// The state kept between polls.
pub(crate) struct Follower<'a> {
    store: &'a Store,
    zone: &'a Name,
    validity: &'a Validity,
    threads: usize,
    /// The chain of the served version, as last written by us.
    signer: Option<(i64, MergeSigner)>,
    /// Generations we published (their records are skipped).
    ours: HashSet<i64>,
}

impl<'a> Follower<'a> {
    /// A follower of `zone` with nothing read yet.
    pub(crate) fn new(
        store: &'a Store,
        zone: &'a Name,
        validity: &'a Validity,
        threads: usize,
    ) -> Follower<'a> {
        Follower {
            store,
            zone,
            validity,
            threads,
            signer: None,
            ours: HashSet::new(),
        }
    }

    /// Forgets what it held (the chain copy, its own generations): for a
    /// signer taking a zone over, or after a fault.
    pub(crate) fn reset(&mut self) {
        self.signer = None;
        self.ours.clear();
    }

    /// The `_id`s of up to `limit` nodes of the served version with a
    /// signature due (the expiry index): asked before a pass takes the
    /// signing lease, so that writers never wait behind the look-up. Not
    /// asked when `earliest`, the zone's earliest expiration as last read,
    /// is not due yet: no signature made since can fall due before it
    /// (a new one lasts more than the refresh window and the jitter).
    pub(crate) async fn due(
        &self,
        served: &ZoneInfo,
        limit: i64,
        earliest: Option<i64>,
    ) -> Result<Vec<String>, SignError> {
        let options = self.refresh_options().await?;
        let horizon = i64::from(options.refresh_before);
        if earliest.is_some_and(|e| e >= horizon) {
            return Ok(Vec::new());
        }
        Ok(self
            .store
            .due_node_ids(self.zone, served.ver, horizon, limit)
            .await?)
    }

    async fn refresh_options(&self) -> Result<SignOptions, SignError> {
        let config = self.store.dnssec_config(self.zone).await?;
        let validity = Validity::of(&config);
        Ok(crate::sign_options(
            config.nsec3.clone(),
            &validity,
            1,
            false,
        ))
    }

    /// Re-signs what falls due in the nodes `due` (from [`Follower::due`])
    /// still due in the served version, read again under the lease, then
    /// moves the serial, signed, and publishes the names written. Nothing
    /// is written when nothing is due.
    pub(crate) async fn refresh(
        &mut self,
        served: &ZoneInfo,
        due: &[String],
    ) -> Result<Report, SignError> {
        let options = self.refresh_options().await?;
        let horizon = i64::from(options.refresh_before);
        let due = self.store.nodes_still_due(due, served.ver, horizon).await?;
        let mut report = Report {
            serial: served.serial,
            ver: served.ver,
            ..Report::default()
        };
        if due.is_empty() {
            return Ok(report);
        }
        report.nodes = due.len() as u64;
        let keys = KeySet::load(self.zone, &self.store.zone_keys(self.zone).await?)?;
        let done = refresh_due(self.store, self.zone, served.ver, due, &keys, &options).await?;
        if let Some((_, signer)) = self.signer.as_mut() {
            signer.refresh_links(&done.nodes);
        }
        report.stats.signed = done.signed;
        report.written = done.names.len() as u64;
        if done.names.is_empty() {
            return Ok(report);
        }
        let serial =
            crate::soa::sign_soa_past(self.store, self.zone, served.ver, served.serial).await?;
        let serial = serial.unwrap_or(served.serial);
        let gen = self.publish(served.ver, serial, done.names).await?;
        report.published_gen = Some(gen);
        report.serial = serial;
        Ok(report)
    }

    /// Publishes in place what it wrote (`names`, the apex added) with
    /// the new `serial`; remembers the generation as its own.
    async fn publish(
        &mut self,
        ver: i64,
        serial: u32,
        mut names: Vec<Name>,
    ) -> Result<i64, SignError> {
        names.push(self.zone.clone());
        names.sort();
        names.dedup();
        let gen = self
            .store
            .publish_in_place(self.zone, ver, serial, Some(&names), None)
            .await?;
        self.ours.insert(gen);
        Ok(gen)
    }

    /// One re-signing step for the zone as now served, having last seen
    /// generation `seen`. Returns what it did and whether it was a full run.
    pub(crate) async fn step(
        &mut self,
        served: &ZoneInfo,
        seen: Option<i64>,
        full: bool,
    ) -> Result<(Report, bool), SignError> {
        let since = match seen {
            Some(seen) if !full => {
                changes_since(self.store, self.zone, seen, served.gen, &self.ours).await?
            }
            _ => None,
        };
        self.ours.retain(|g| *g > served.gen);
        let Some(since) = since else {
            return self.full().await;
        };
        if since.signed_elsewhere {
            self.signer = None;
        }
        if since.unsigned.is_empty() {
            return Ok((
                Report {
                    serial: served.serial,
                    ver: served.ver,
                    ..Report::default()
                },
                false,
            ));
        }
        if self
            .signer
            .as_ref()
            .is_some_and(|(ver, _)| *ver != served.ver)
        {
            self.signer = None;
        }
        if self.signer.is_none() {
            let signer = MergeSigner::new(self.store, self.zone, served.ver)
                .await?
                .ok_or_else(|| SignError::NotSecured(self.zone.to_string()))?;
            self.signer = Some((served.ver, signer));
        }
        let (_, signer) = self.signer.as_mut().expect("set above");
        signer.renew_validity(self.validity);
        let done = match signer.resign_names(self.store, &since.unsigned).await {
            Ok(done) => done,
            Err(e) => {
                // Part of it may be written: start again from the database.
                self.signer = None;
                return Err(e);
            }
        };
        if signer.needs_full_resign() {
            return self.full().await;
        }
        let mut report = Report {
            nodes: since.unsigned.len() as u64,
            stats: PlanStats {
                signed: done.signed,
                ..PlanStats::default()
            },
            written: done.written,
            serial: served.serial,
            ver: served.ver,
            ..Report::default()
        };
        if done.written > 0 {
            let serial = signer.sign_soa(self.store, served.serial).await?;
            let touched = signer.take_touched();
            let gen = self.publish(served.ver, serial, touched).await?;
            report.published_gen = Some(gen);
            report.serial = serial;
            report.written += 1;
            report.stats.signed += 1;
        }
        Ok((report, false))
    }

    /// The served version's apex key sets made again and signed
    /// ([`crate::resign::resign_apex_keys`]), the rest left as it is; the
    /// chain copy signs with the new keys from now on. `None`: the step
    /// needs a whole re-sign.
    pub(crate) async fn apex_keys(&mut self) -> Result<Option<Report>, SignError> {
        let served = self
            .store
            .find_zone(self.zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(self.zone.to_string()))?;
        let report =
            crate::resign::resign_apex_keys(self.store, self.zone, served.ver, self.validity)
                .await?;
        if let Some(r) = &report {
            self.ours.extend(r.published_gen);
            if let Some((_, signer)) = self.signer.as_mut() {
                signer.reload_keys(self.store).await?;
            }
        }
        Ok(report)
    }

    /// Re-signs the whole served version; the chain copy is read again
    /// when next needed. With `every`, every signature is made anew.
    pub(crate) async fn full(&mut self) -> Result<(Report, bool), SignError> {
        self.full_with(false).await
    }

    /// [`Follower::full`], replacing every signature when `every`.
    pub(crate) async fn full_with(&mut self, every: bool) -> Result<(Report, bool), SignError> {
        self.signer = None;
        // The version served now (a replace may have switched since the poll).
        let served = self
            .store
            .find_zone(self.zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(self.zone.to_string()))?;
        let (report, nodes) = resign_version(
            self.store,
            self.zone,
            served.ver,
            None,
            true,
            every,
            self.validity,
            self.threads,
            &NoProgress,
        )
        .await?;
        self.ours.extend(report.published_gen);
        // Keep the chain as just written: the next incremental pass need
        // not read it.
        self.signer = MergeSigner::with_nodes(self.store, self.zone, report.ver, Some(nodes))
            .await?
            .map(|s| (report.ver, s));
        Ok((report, true))
    }
}

/// Signs what writers that do not sign changed in `zone` since generation
/// `since` (their change records), as one `resign --follow` pass would; a
/// whole re-sign when the records do not account for every generation.
/// The caller holds the signing lease (an importer that wrote unsigned).
pub async fn sign_changes_since(
    store: &Store,
    zone: &Name,
    since: i64,
) -> Result<Report, SignError> {
    let served = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
    let validity = Validity::default();
    let mut follower = Follower::new(store, zone, &validity, 0);
    follower
        .step(&served, Some(since), false)
        .await
        .map(|(report, _)| report)
}

/// `resign --follow`: polls the zone's generation (one `_id` read per
/// `interval`) and re-signs whenever any writer changed the zone: only the
/// names the writers' change records list when they account for the
/// change, else the whole zone (see the module documentation); and the
/// whole zone at least every `full_every` (`--full-every`, default an
/// hour) so signatures never near expiry. Returns
/// only on a fault that is not the database's (a missing key, an unsigned
/// zone); database faults are reported and retried.
pub async fn follow(
    store: &Store,
    zone: &Name,
    validity: &Validity,
    threads: usize,
    interval: Duration,
    full_every: Duration,
    progress: &dyn Progress,
) -> Result<(), SignError> {
    // The one signing writer of this zone for as long as it follows;
    // importers that find the lease held hand their names over through
    // their (unsigned) change records.
    let lease = crate::lease::take(store, zone, FOLLOWER, crate::lease::lease_wait()).await?;
    let mut follower = Follower::new(store, zone, validity, threads);
    let mut seen: Option<i64> = None;
    let mut last_full = Instant::now();
    loop {
        if lease.is_lost() {
            return Err(SignError::Busy(format!(
                "zone {zone}: the signing lease was taken over (this process stalled past its expiry); stopping"
            )));
        }
        let served = match store.find_zone(zone).await {
            Ok(Some(z)) => z,
            Ok(None) => {
                tracing::warn!(%zone, "the zone is not served; waiting for it");
                tokio::time::sleep(interval).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(%zone, error = %e, "cannot read the zone; retrying");
                tokio::time::sleep(interval).await;
                continue;
            }
        };
        let due = last_full.elapsed() > full_every;
        if Some(served.gen) != seen || due {
            let started = Instant::now();
            match follower.step(&served, seen, due).await {
                Ok((report, full)) => {
                    progress.resigned(zone, &report, started.elapsed());
                    if full {
                        last_full = Instant::now();
                    }
                    // The generation we read, not the one we published: a
                    // write that raced with this run is looked at again
                    // (the next run then finds nothing else to do).
                    seen = Some(served.gen);
                }
                Err(SignError::Store(e)) => {
                    tracing::warn!(%zone, error = %e, "re-signing failed; retrying");
                }
                Err(e) => return Err(e),
            }
        }
        tokio::time::sleep(interval).await;
    }
}
