//! Reading the zone journal for IXFR: the chain of entries from a
//! client's serial to now, planned on the entries' heads, then streamed
//! entry by entry.
//!
//! ```text
//!  journal_chain(zone now, their serial)
//!   plan: entries newest first, their records left out of the read (gen,
//!     base, exact, the two SOAs), walked back from the zone's gen: each
//!     exact, each ending where the next begins, the first starting at
//!     their serial ─► the gens, oldest first; else None (another writer
//!     changed the zone between, an entry pruned or too large): the caller
//!     sends the whole zone
//!     no entry for the zone's gen yet while a writer holds the zone lock
//!     (it journals right after its publish, under the lock): look again
//!     every ENTRY_PENDING_POLL, for ENTRY_PENDING_WAIT at most
//!   stream: {zone, gen ∈ plan} by gen, JOURNAL_BATCH entries a round trip
//!     ─► one JournalEntry at a time; an entry of the plan missing (pruned
//!     meanwhile) or out of order: an error, so the transfer is aborted
//!  both reads: maxTimeMS (the plan: the handle's read deadline; the
//!  stream: TRANSFER_MAX_TIME, as the transfer cursor)
//! ```
//!
//! Memory holds the plan (at most JOURNAL_KEPT heads, a few hundred bytes
//! each) and one batch of entries, where the whole chain could be
//! JOURNAL_KEPT entries of MAX_JOURNAL_RECORDS records.

use super::journal::{entry_from, soa_serial, JOURNAL_KEPT};
use crate::lock::ZONE_LOCK;
use crate::schema::ZoneInfo;
use crate::store::{Store, StoreError};
use crate::transfer::TRANSFER_MAX_TIME;
use crate::Name;
use dns::journal::JournalEntry;
use futures::stream::{BoxStream, StreamExt};
use futures::TryStreamExt;
use mongodb::bson::doc;
use std::time::Duration;

/// Journal entries fetched per round trip while an IXFR is sent: an
/// entry may hold up to MAX_JOURNAL_RECORDS records.
pub const JOURNAL_BATCH: u32 = 4;

/// The entries of a chain, oldest first, one at a time.
pub type JournalStream = BoxStream<'static, Result<JournalEntry, StoreError>>;

impl Store {
    /// The journal entries that take `zone` (as served now) from serial
    /// `theirs` to its current content, oldest first, streamed; `None`
    /// when the journal does not account for every change since (see the
    /// module documentation).
    pub async fn journal_chain(
        &self,
        zone: &ZoneInfo,
        theirs: u32,
    ) -> Result<Option<JournalStream>, StoreError> {
        let waiting_since = std::time::Instant::now();
        loop {
            match self.journal_plan(zone, theirs).await? {
                Plan::Chain(gens) => {
                    return Ok(Some(self.journal_entries(&zone.apex, gens).await?))
                }
                Plan::Pending
                    if waiting_since.elapsed() < ENTRY_PENDING_WAIT
                        && self.lock_holder(ZONE_LOCK, &zone.apex).await?.is_some() =>
                {
                    tokio::time::sleep(ENTRY_PENDING_POLL).await;
                }
                Plan::Pending | Plan::None => return Ok(None),
            }
        }
    }

    /// The generations of the chain from `theirs` to `zone` now, oldest
    /// first, read from the entries' heads.
    async fn journal_plan(&self, zone: &ZoneInfo, theirs: u32) -> Result<Plan, StoreError> {
        let journal = self.journal();
        let mut find = journal
            .find(doc! {"zone": zone.apex.to_string(), "gen": {"$lte": zone.gen}})
            .projection(doc! {"rm": 0, "add": 0, "rmw": 0, "addw": 0})
            .sort(doc! {"gen": -1})
            .batch_size(u32::try_from(JOURNAL_KEPT).unwrap_or(u32::MAX))
            .limit(JOURNAL_KEPT);
        if let Some(d) = self.read_deadline {
            find = find.max_time(d);
        }
        let mut cursor = find.await?;
        let mut gens = Vec::new();
        let (mut gen, mut serial) = (zone.gen, zone.serial);
        while let Some(d) = cursor.try_next().await? {
            let entry = entry_from(&d, false)?;
            if entry.gen > gen {
                continue;
            }
            if gens.is_empty() && entry.gen < zone.gen {
                // The newest entry is older than the zone: the current
                // generation's may not be written yet.
                return Ok(Plan::Pending);
            }
            let ends_here = entry.gen == gen && soa_serial(&entry.to_soa) == Some(serial);
            if !ends_here || !entry.exact {
                return Ok(Plan::None);
            }
            gen = entry.base_gen;
            let Some(from) = soa_serial(&entry.from_soa) else {
                return Ok(Plan::None);
            };
            serial = from;
            gens.push(entry.gen);
            if serial == theirs {
                gens.reverse();
                return Ok(Plan::Chain(gens));
            }
        }
        Ok(if gens.is_empty() {
            Plan::Pending
        } else {
            Plan::None
        })
    }

    /// The entries `gens` of `zone` in that order, whole, a batch at a time.
    async fn journal_entries(
        &self,
        zone: &Name,
        gens: Vec<i64>,
    ) -> Result<JournalStream, StoreError> {
        let journal = self.journal();
        let cursor = journal
            .find(doc! {"zone": zone.to_string(), "gen": {"$in": gens.clone()}})
            .sort(doc! {"gen": 1})
            .batch_size(JOURNAL_BATCH)
            .max_time(TRANSFER_MAX_TIME)
            .await?;
        let zone = zone.clone();
        let entries =
            futures::stream::unfold((cursor, gens.into_iter()), move |(mut cursor, mut want)| {
                let zone = zone.clone();
                async move {
                    let next = want.next()?;
                    let entry = match cursor.try_next().await {
                        Ok(Some(d)) => entry_from(&d, true).map_err(StoreError::from),
                        Ok(None) => Err(pruned(&zone, next)),
                        Err(e) => Err(e.into()),
                    };
                    let entry = entry.and_then(|e| match e.gen == next {
                        true => Ok(e),
                        false => Err(pruned(&zone, next)),
                    });
                    Some((entry, (cursor, want)))
                }
            });
        Ok(entries.boxed())
    }
}

/// What the journal's heads say of a chain.
enum Plan {
    /// The generations of the chain, oldest first.
    Chain(Vec<i64>),
    /// No entry for the zone's current generation (yet: the writer that
    /// published it journals it under the zone lock, right after).
    Pending,
    /// The journal does not reach their serial.
    None,
}

/// How long an IXFR waits, at most, for the entry of a generation just
/// published while its writer still holds the zone lock.
const ENTRY_PENDING_WAIT: Duration = Duration::from_secs(1);

/// How often it looks again meanwhile.
const ENTRY_PENDING_POLL: Duration = Duration::from_millis(20);

/// The entry `gen` of `zone` went while its chain was read.
fn pruned(zone: &Name, gen: i64) -> StoreError {
    StoreError::Conflict(format!(
        "journal entry {gen} of {zone} was deleted while an IXFR read it"
    ))
}
