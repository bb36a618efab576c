//! The poller: keeps the registry fresh from the database.
//!
//! ```text
//!  poll_loop, every interval (one poll at most 4 intervals, 15 s at least):
//!     first poll ─► last_seq = meta.seq; preload wanted
//!        preload (a task of its own) ─► every served zone (up to
//!        preload_max) ─► the registry is complete
//!     meta.seq unchanged ─► nothing (one point read)
//!     meta.seq moved ─► read_moved: change records of last+1 ..= seq,
//!        then the zones they name (or every zone above last) ─►
//!        deleted ─► remove_zones
//!        changed ─► apply_logged_changes (narrowed around holes,
//!                   `narrowing.rs`) ─► last_seq moves past what is
//!                   accounted for (a hole or an unshown generation holds
//!                   it back, 5 s at most)
//! ```
//!
//! The registry itself (what is served now) is `registry.rs`; who hears its
//! changes, `events.rs`.

use super::narrowing::{first_unshown, holes, Narrowing};
use super::registry::ZoneRegistry;
use crate::cache::Counters;
use backend_mongo::{Store, StoreError};
use dns::{ChangeRecord, Name, ZoneInfo};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `meta.seq` may stay ahead of every zone's `gen` (a writer that
/// died between its two steps) before the poller stops asking.
const STUCK_AFTER: Duration = Duration::from_secs(5);

/// How long the zones a hole could belong to keep their held generation
/// waiting for the hole's writer (which then shows which names it changed),
/// before they drop everything instead. Well inside the 1-s freshness bound.
const HOLE_WAIT: Duration = Duration::from_millis(200);

/// Longest one poll may take before it is abandoned and retried.
const POLL_LIMIT: Duration = Duration::from_secs(15);

/// Most change records read in one poll; a longer stretch of generations
/// (a bulk import of many zones) drops changed zones entirely.
const MAX_RECORD_READS: i64 = 256;

/// The generations whose change records a poll reads again once it has
/// read the zones: from the first one after `last` without a record up to
/// the highest generation a zone shows (none past [`MAX_RECORD_READS`]).
fn records_to_read_again(
    last: i64,
    records: &HashMap<i64, ChangeRecord>,
    zones: &[ZoneInfo],
) -> Option<(i64, i64)> {
    let top = zones.iter().map(|z| z.gen).max()?;
    if top - last > MAX_RECORD_READS {
        return None;
    }
    let gap = (last + 1..=top).find(|g| !records.contains_key(g))?;
    Some((gap, top))
}

/// The changed zones whose change records list their apex and whose apex
/// holds a DNAME now (or could not be read): a DNAME there redirects every
/// name, so no cached reply of the zone outlives the change. One point read
/// per such zone, on the poll's path, never on the answer path.
async fn apexes_redirecting(
    store: &Store,
    zones: &[ZoneInfo],
    records: &HashMap<i64, ChangeRecord>,
) -> HashSet<Name> {
    let mut out = HashSet::new();
    for zone in zones {
        let listed = records.values().any(|r| {
            r.zone == zone.apex && r.names.as_ref().is_some_and(|n| n.contains(&zone.apex))
        });
        if !listed {
            continue;
        }
        let redirects = match store.get_node(zone, &zone.apex).await {
            Ok(apex) => apex.is_some_and(|a| a.rrset(dns::RType::DNAME).is_some()),
            Err(_) => true,
        };
        if redirects {
            out.insert(zone.apex.clone());
        }
    }
    out
}

/// How long `gen` has been the generation `tracker` follows (zero when it
/// is new, and from then on it is followed). Past [`HOLE_WAIT`] the zones a
/// hole could belong to stop waiting for it; past [`STUCK_AFTER`] it is
/// given up on (its writer died, or another writer's later generation on
/// the same zone hid it).
fn age_of(tracker: &std::sync::Mutex<Option<(i64, Instant)>>, gen: i64) -> Duration {
    let mut followed = tracker.lock().unwrap_or_else(|p| p.into_inner());
    match *followed {
        Some((g, since)) if g == gen => since.elapsed(),
        _ => {
            *followed = Some((gen, Instant::now()));
            Duration::ZERO
        }
    }
}

impl ZoneRegistry {
    /// Loads every served zone, if there are at most `preload_max`, and
    /// marks the registry complete. Called after `last_seq` is set, so a
    /// zone created meanwhile is seen by the next poll.
    pub async fn preload(&self, store: &Store) -> Result<(), StoreError> {
        let started = Instant::now();
        let purges = self.purges.load(Ordering::Acquire);
        match store.served_zones(self.preload_max).await? {
            Some(_) if self.purges.load(Ordering::Acquire) != purges => {}
            Some(all) => {
                self.add_zones(all.iter());
                self.complete.store(true, Ordering::Release);
                self.zones_epoch.fetch_add(1, Ordering::AcqRel);
                tracing::info!(
                    zones = all.len(),
                    took_ms = started.elapsed().as_millis() as u64,
                    "every served zone loaded: names in no zone need no database read"
                );
            }
            None => tracing::info!(
                limit = self.preload_max,
                "more zones than zone_preload_max: zones are looked up per name"
            ),
        }
        Ok(())
    }

    /// Milliseconds since the last successful poll (freshness lag bound).
    pub fn poll_age(&self) -> Option<Duration> {
        self.last_poll
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .map(|t| t.elapsed())
    }

    /// One poll: reads `meta.seq`, and the changed zones if it moved.
    pub async fn poll_once(&self, store: &Store) -> Result<usize, StoreError> {
        let started = Instant::now();
        let seq = store.change_seq().await?;
        tracing::trace!(
            seq,
            took_us = started.elapsed().as_micros() as u64,
            "polled meta.seq"
        );
        // `last_seq` is the highest zone generation applied, not the counter
        // read: a writer bumps `meta.seq` before it writes the zone's `gen`,
        // so a poll in between must not skip that generation.
        let last = self.last_seq.load(Ordering::Acquire);
        let mut changed = 0;
        if last == i64::MIN {
            self.last_seq.store(seq, Ordering::Release);
            self.preload_wanted
                .store(self.preload_max > 0, Ordering::Release);
        } else if seq > last {
            changed = self.apply_moved(store, last, seq).await?;
        }
        *self.last_poll.write().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(changed)
    }

    /// Applies what moved after generation `last`, the counter read at
    /// `seq`: deleted zones dropped, changed ones narrowed or dropped, and
    /// `last_seq` moved as far as every generation below it is accounted
    /// for. Returns the zones changed.
    async fn apply_moved(&self, store: &Store, last: i64, seq: i64) -> Result<usize, StoreError> {
        let (deleted, zones, records) = self.read_moved(store, last, seq).await?;
        if !deleted.is_empty() {
            tracing::info!(zones = deleted.len(), "zones deleted: no longer served");
            self.remove_zones(&deleted);
        }
        tracing::debug!(seq, last, changed = zones.len(), "zones changed");
        let top = zones.iter().map(|z| z.gen).max();
        // A generation nothing accounts for: a writer between taking it and
        // showing it, or one that keeps no change record. The zones it
        // could belong to wait for it a moment, then drop everything;
        // `last_seq` stays below it so its zone is not skipped.
        let gens: Vec<i64> = zones.iter().map(|z| z.gen).collect();
        let holes = top.map_or_else(Vec::new, |top| holes(last + 1, top, &records, &gens));
        let first_hole = holes.first().map(|h| (*h, age_of(&self.hole, *h)));
        let narrowing = Narrowing::AroundHoles {
            holes: &holes,
            wait: first_hole.is_some_and(|(_, age)| age <= HOLE_WAIT),
            read_from: self.given_up.load(Ordering::Acquire),
        };
        let redirecting = apexes_redirecting(store, &zones, &records).await;
        let waiting = self.apply_logged_changes(&zones, &records, narrowing, &redirecting);
        match top {
            Some(top) => {
                let unshown = first_unshown(last + 1, top, &records, &zones, &deleted);
                self.advance_past(last, top, first_hole, unshown, waiting);
            }
            None => self.wait_for_unshown(seq),
        }
        Ok(zones.len())
    }

    /// Moves `last_seq` up to `top`, but below the first hole and the
    /// first generation not yet shown (unless given up on after
    /// STUCK_AFTER) and below every zone that waited.
    fn advance_past(
        &self,
        last: i64,
        top: i64,
        first_hole: Option<(i64, Duration)>,
        unshown: Option<i64>,
        waiting: Option<i64>,
    ) {
        let mut upto = top;
        // Records not read for the whole stretch: nothing in it is
        // accounted for.
        let mut gave_up = top - last > MAX_RECORD_READS;
        if let Some((h, age)) = first_hole {
            match age <= STUCK_AFTER {
                true => upto = upto.min(h - 1),
                false => gave_up = true,
            }
        }
        if let Some(u) = unshown {
            match age_of(&self.unshown, u) <= STUCK_AFTER {
                true => upto = upto.min(u - 1),
                false => gave_up = true,
            }
        }
        if let Some(w) = waiting {
            upto = upto.min(w);
        }
        let upto = upto.max(last);
        if gave_up {
            self.given_up.fetch_max(upto, Ordering::AcqRel);
        }
        self.last_seq.store(upto, Ordering::Release);
        *self.stuck_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The counter moved to `seq` but no zone shows it yet: ask again next
    /// time, unless a writer died between the two steps long ago.
    fn wait_for_unshown(&self, seq: i64) {
        let mut stuck = self.stuck_since.lock().unwrap_or_else(|p| p.into_inner());
        match *stuck {
            Some(since) if since.elapsed() > STUCK_AFTER => {
                self.given_up.fetch_max(seq, Ordering::AcqRel);
                self.last_seq.store(seq, Ordering::Release);
                *stuck = None;
            }
            Some(_) => {}
            None => *stuck = Some(Instant::now()),
        }
    }

    /// What moved after generation `last` (up to `seq` at least): the
    /// zones deleted, the zones changed, and the change records of the
    /// generations in between. When the records account for every
    /// generation up to `seq` (but young gaps), only the zones they name are read, one
    /// `_id` read each; otherwise every zone above `last` is looked for
    /// (a scan of the zones on FerretDB, seconds under load for 10,000
    /// zones, which is what held freshness back to the poll's length).
    async fn read_moved(
        &self,
        store: &Store,
        last: i64,
        seq: i64,
    ) -> Result<(Vec<Name>, Vec<ZoneInfo>, HashMap<i64, ChangeRecord>), StoreError> {
        let read_upto = match seq - last <= MAX_RECORD_READS {
            true => seq,
            false => last,
        };
        let mut records = store.change_records(last + 1, read_upto).await?;
        // A generation without a record, young, is most likely a writer
        // between taking it and storing its record: the zones it could
        // belong to wait for it (`narrowing.rs`). Only an older one (a
        // writer that keeps no records) is looked for in every zone.
        let gap = (last + 1..=seq).find(|g| !records.contains_key(g));
        let by_records = read_upto == seq && gap.is_none_or(|g| age_of(&self.hole, g) <= HOLE_WAIT);
        let (deleted, zones) = match by_records {
            true => {
                let mut named: Vec<Name> = records.values().map(|r| r.zone.clone()).collect();
                named.sort();
                named.dedup();
                store.zones_moved_since(&named, last).await?
            }
            false => (
                store.zones_deleted_since(last).await?,
                store.zones_changed_since(last).await?,
            ),
        };
        // The zones were read after the records: a writer may have stored
        // its record and shown its generation in between (the counter
        // moves first, so its generation looked like a gap), or the zones
        // show generations above `seq`. The gaps up to the top are read
        // again, so such a zone's change is still narrowed to its names.
        if let Some((from, to)) = records_to_read_again(last, &records, &zones) {
            records.extend(store.change_records(from, to).await?);
        }
        Ok((deleted, zones, records))
    }

    /// Polls forever every `interval`; faults are logged and retried.
    pub async fn poll_loop(
        self: Arc<Self>,
        store: Store,
        interval: Duration,
        counters: Arc<Counters>,
    ) {
        let mut failing = false;
        // A poll that hangs (a stuck connection) must not stop freshness,
        // but a slow one must be allowed to finish: a poll cut off at 1 s
        // on a saturated database never completes, and then no change is
        // ever seen (the 1/100 scenario saw 208-s freshness that way). The
        // driver notices a dead server within its heartbeat anyway.
        let limit = (interval * 4).max(POLL_LIMIT);
        loop {
            let polled = match tokio::time::timeout(limit, self.poll_once(&store)).await {
                Ok(result) => result,
                Err(_) => Err(StoreError::Timeout(format!(
                    "change poll took longer than {limit:?}"
                ))),
            };
            match polled {
                Ok(n) => {
                    if failing {
                        tracing::info!("change polling works again");
                        failing = false;
                    }
                    if n > 0 {
                        counters.zone_changes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    if self.preload_wanted.swap(false, Ordering::AcqRel) {
                        // In a task of its own: loading many zones takes
                        // longer than a poll may, and polls go on meanwhile.
                        let (registry, store) = (self.clone(), store.clone());
                        tokio::spawn(async move {
                            if let Err(e) = registry.preload(&store).await {
                                tracing::warn!(error = %e, "loading every zone failed; will retry");
                                registry.preload_wanted.store(true, Ordering::Release);
                            }
                        });
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "change polling failed; cached answers age by TTL");
                        failing = true;
                    }
                }
            }
            tokio::time::sleep(interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_info as info;
    use super::*;

    #[test]
    fn a_record_stored_after_the_records_were_read_is_read_again() {
        let record = |zone: &str| ChangeRecord {
            zone: zone.parse().unwrap(),
            names: Some(Vec::new()),
            signed: false,
        };
        // Records 11 and 12 read; the zone shows 14: 13 and 14 again.
        let records = HashMap::from([(11, record("a.test.")), (12, record("a.test."))]);
        let zones = [info("a.test.", 14), info("b.test.", 12)];
        assert_eq!(records_to_read_again(10, &records, &zones), Some((13, 14)));
        // A gap below the top (a writer between its steps) is read too.
        let records = HashMap::from([(11, record("a.test.")), (13, record("a.test."))]);
        let zones = [info("a.test.", 13)];
        assert_eq!(records_to_read_again(10, &records, &zones), Some((12, 13)));
        // Every generation accounted for, or too long a stretch: nothing.
        let records = HashMap::from([(11, record("a.test."))]);
        assert_eq!(
            records_to_read_again(10, &records, &[info("a.test.", 11)]),
            None
        );
        let far = [info("a.test.", 10 + MAX_RECORD_READS + 1)];
        assert_eq!(records_to_read_again(10, &records, &far), None);
    }
}
