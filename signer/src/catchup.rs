//! Catching a new version up with what merge writers wrote into the served
//! one while it was being built (`secure-zone`, `unsecure-zone`).
//!
//! ```text
//!  pass(): zones._id ─► still serving `from`? (else: replaced, start over)
//!     ─► change records of gen seen+1..=now (every one accounted for,
//!        else start over) ─► names
//!     ─► each name (COPIES_AT_ONCE at a time): ordinary RRsets read from
//!        `from`, written into `to`
//!        (a name gone from `from` is deleted from `to`)
//!        (keeping `to`'s chain fields) ─► signed: MergeSigner::resign_names
//!  the caller repeats passes until one is small, then takes the zone lock
//!  (no writer can publish), runs a last pass and switches
//! ```

use crate::merge::MergeSigner;
use crate::plan::signer_owned;
use crate::SignError;
use backend_mongo::dnssec::{FullNode, SignedRRset};
use backend_mongo::{Store, StoreError};
use dns::{ChangeRecord, Name, RType, ZoneInfo};
use futures::{StreamExt, TryStreamExt};

/// Most generations looked at record by record in one pass; more: not
/// accounted for. A pass after a long signing covers every generation
/// since it began (two importers publishing every 200 ms make 10 a second).
pub(crate) const MAX_GENERATIONS: i64 = 65_536;

/// Change records read at once (point reads by `_id`, concurrently).
const RECORDS_AT_ONCE: i64 = 256;

/// Names a pass copies at once (two point reads and one single-document
/// write each: few enough for FerretDB's connection pool).
const COPIES_AT_ONCE: usize = 8;

/// The change records of `zone` for generations `from+1..=to`, or `None`
/// when they do not account for every generation in between (a record
/// missing, saying "all", or too many generations). A generation with no
/// record is accounted for when another zone sits at it now. A stretch
/// longer than [`MAX_GENERATIONS`] (other zones' writes during a long
/// read: 100,000 small zones imported before the seed scenario at 1/10)
/// is looked at through one scan of the records, not record by record.
pub(crate) async fn records_since(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
) -> Result<Option<Vec<(i64, ChangeRecord)>>, StoreError> {
    records_since_within(store, zone, from, to, MAX_GENERATIONS).await
}

/// [`records_since`], reading record by record up to `max_point_reads`
/// generations (a parameter so tests can reach the scan with few).
pub(crate) async fn records_since_within(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
    max_point_reads: i64,
) -> Result<Option<Vec<(i64, ChangeRecord)>>, StoreError> {
    if to <= from {
        return Ok(Some(Vec::new()));
    }
    let (mut records, recorded) = match to - from > max_point_reads {
        false => {
            let records = change_records_between(store, from, to).await?;
            let recorded: std::collections::HashSet<i64> = records.keys().copied().collect();
            (records, recorded)
        }
        true => {
            let zones = store.change_zones(from + 1, to).await?;
            let ours: Vec<i64> = zones
                .iter()
                .filter(|(_, z)| *z == zone)
                .map(|(g, _)| *g)
                .collect();
            if ours.len() as i64 > MAX_GENERATIONS {
                return Ok(None);
            }
            (records_of(store, &ours).await?, zones.into_keys().collect())
        }
    };
    let mut out = Vec::new();
    for (gen, r) in (from + 1..=to).filter_map(|g| records.remove(&g).map(|r| (g, r))) {
        if r.zone == *zone {
            if r.names.is_none() {
                return Ok(None);
            }
            out.push((gen, r));
        }
    }
    let missing: Vec<i64> = (from + 1..=to).filter(|g| !recorded.contains(g)).collect();
    if !missing.is_empty() {
        let others: std::collections::HashSet<i64> = store
            .zones_changed_since(from)
            .await?
            .into_iter()
            .filter(|z| z.apex != *zone)
            .map(|z| z.gen)
            .collect();
        if !missing.iter().all(|g| others.contains(g)) {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// The change records of the generations `gens`, [`RECORDS_AT_ONCE`] at a
/// time (point reads).
async fn records_of(
    store: &Store,
    gens: &[i64],
) -> Result<std::collections::HashMap<i64, ChangeRecord>, StoreError> {
    let mut records = std::collections::HashMap::new();
    for chunk in gens.chunks(RECORDS_AT_ONCE as usize) {
        let reads = chunk.iter().map(|g| store.change_records(*g, *g));
        for found in futures::future::try_join_all(reads).await? {
            records.extend(found);
        }
    }
    Ok(records)
}

/// True when a change record of `zone` for generations `from+1..=to` is
/// not signed (a writer that does not sign, or found the lease held), or
/// when there are too many generations to look at.
pub(crate) async fn unsigned_writes_since(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
) -> Result<bool, StoreError> {
    if to - from > MAX_GENERATIONS {
        return Ok(true);
    }
    let records = change_records_between(store, from, to).await?;
    Ok(records.values().any(|r| r.zone == *zone && !r.signed))
}

/// The change records of generations `from+1..=to` (any zone), read
/// [`RECORDS_AT_ONCE`] at a time.
async fn change_records_between(
    store: &Store,
    from: i64,
    to: i64,
) -> Result<std::collections::HashMap<i64, ChangeRecord>, StoreError> {
    let mut records = std::collections::HashMap::new();
    let mut first = from + 1;
    while first <= to {
        let last = (first + RECORDS_AT_ONCE - 1).min(to);
        records.extend(store.change_records(first, last).await?);
        first = last + 1;
    }
    Ok(records)
}

/// Why a catch-up cannot go on: the caller builds the version again.
#[derive(Debug)]
pub(crate) struct StartOver(pub String);

/// A new version being caught up with the served one.
pub(crate) struct CatchUp<'a> {
    store: &'a Store,
    zone: &'a Name,
    /// The served version the new one was built from.
    from: i64,
    /// The new version.
    to: i64,
    /// Last generation caught up with.
    seen: i64,
    /// Signs what is copied (`secure-zone`); `None` copies plain records.
    signer: Option<MergeSigner>,
    /// Names copied so far.
    pub copied: u64,
}

impl<'a> CatchUp<'a> {
    /// Catches version `to` up with `served`, the version it was built
    /// from, from the generation `served` carries (read before its nodes
    /// were).
    pub(crate) fn new(
        store: &'a Store,
        zone: &'a Name,
        served: &ZoneInfo,
        to: i64,
        signer: Option<MergeSigner>,
    ) -> Self {
        CatchUp {
            store,
            zone,
            from: served.ver,
            to,
            seen: served.gen,
            signer,
            copied: 0,
        }
    }

    /// The signer, for the SOA after the last pass.
    pub(crate) fn signer(&mut self) -> Option<&mut MergeSigner> {
        self.signer.as_mut()
    }

    /// One pass; returns how many names it copied, or why to start over.
    pub(crate) async fn pass(&mut self) -> Result<Result<usize, StartOver>, SignError> {
        let now = self
            .store
            .find_zone(self.zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(self.zone.to_string()))?;
        if now.ver != self.from {
            return Ok(Err(StartOver(format!(
                "another writer switched the zone to version {} meanwhile",
                now.ver
            ))));
        }
        let Some(records) = records_since(self.store, self.zone, self.seen, now.gen).await? else {
            return Ok(Err(StartOver(
                "writes happened that their change records do not list".into(),
            )));
        };
        let mut names: Vec<Name> = records
            .into_iter()
            .flat_map(|(_, r)| r.names.unwrap_or_default())
            .filter(|n| n.is_subdomain_of(self.zone))
            .collect();
        names.sort();
        names.dedup();
        // Each name is its own document: copied several at once, so the
        // last pass (under the zone lock, merge writers waiting) is short.
        let copies: Vec<_> = names.iter().map(|name| self.copy(name)).collect();
        futures::stream::iter(copies)
            .buffer_unordered(COPIES_AT_ONCE)
            .try_collect::<Vec<()>>()
            .await?;
        if let Some(signer) = self.signer.as_mut() {
            signer.resign_names(self.store, &names).await?;
            if signer.needs_full_resign() {
                return Ok(Err(StartOver(
                    "a delegation or DNAME appeared above existing names".into(),
                )));
            }
        }
        self.seen = now.gen;
        self.copied += names.len() as u64;
        Ok(Ok(names.len()))
    }

    /// Copies the ordinary RRsets of `name` from the served version into
    /// the new one, keeping the new one's chain fields and apex SOA.
    async fn copy(&self, name: &Name) -> Result<(), StoreError> {
        let src = self
            .store
            .read_full_node(self.zone, self.from, name)
            .await?;
        let dst = self.store.read_full_node(self.zone, self.to, name).await?;
        if src.is_none() {
            // Deleted from the served version (a record edit, or a foreign
            // writer): gone from the new one too. Signed, the signer then
            // finds it absent and relinks the chain around it.
            return match dst {
                Some(_) => self.store.delete_node(self.zone, self.to, name).await,
                None => Ok(()),
            };
        }
        let apex = name == self.zone;
        let kept = |r: &&SignedRRset| {
            let t = r.rrset.rtype;
            let ours = signer_owned(t) || (apex && t == RType::SOA);
            ours && (self.signer.is_some() || t == RType::SOA)
        };
        let mut rrsets: Vec<SignedRRset> = dst
            .as_ref()
            .map(|d| d.rrsets.iter().filter(kept).cloned().collect())
            .unwrap_or_default();
        for r in src.iter().flat_map(|s| s.rrsets.iter()) {
            let t = r.rrset.rtype;
            if signer_owned(t) || (apex && t == RType::SOA) {
                continue;
            }
            rrsets.push(SignedRRset {
                rrset: r.rrset.clone(),
                sigs: Vec::new(),
                sd: None,
            });
        }
        let node = FullNode {
            name: name.clone(),
            rrsets,
            dk: if self.signer.is_some() {
                dst.and_then(|d| d.dk)
            } else {
                None
            },
            nsec3: false,
        };
        self.store.put_full_node(self.zone, self.to, &node).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_mongo::testing::{
        block_on, example_net, merge_as_foreign_writer, show_generation, TestDb,
    };
    use backend_mongo::NodeWrite;
    use dns::RRset;

    fn a_node(name: &str) -> NodeWrite {
        NodeWrite {
            name: name.parse().unwrap(),
            rrsets: vec![RRset {
                rtype: RType::A,
                ttl: 300,
                rdata: vec![vec![192, 0, 2, 9].into_boxed_slice()],
            }],
        }
    }

    /// The generations and names of a catch-up's answer.
    fn listed(r: Option<Vec<(i64, ChangeRecord)>>) -> Option<Vec<(i64, Vec<Name>)>> {
        r.map(|v| v.into_iter().map(|(g, c)| (g, c.names.unwrap())).collect())
    }

    #[test]
    fn a_long_stretch_is_read_by_one_scan_with_the_same_answer() {
        block_on(async {
            let db = TestDb::new("catchup_scan").await;
            let store = &db.store;
            let (zone, nodes) = example_net();
            db.write_zone(&zone, &nodes).await;
            let from = store.find_zone(&zone).await.unwrap().unwrap().gen;
            // Another zone with records, a generation without a record
            // that another zone sits at, and two merges into ours.
            let other: Name = "example.org.".parse().unwrap();
            let mut other_nodes = nodes.clone();
            other_nodes[0].name = other.clone();
            other_nodes.truncate(1);
            db.write_zone(&other, &other_nodes).await;
            merge_as_foreign_writer(store, &zone, &[a_node("x.example.net.")])
                .await
                .unwrap();
            let gen = store.next_seq().await.unwrap();
            show_generation(store, &other, gen).await.unwrap();
            merge_as_foreign_writer(store, &zone, &[a_node("y.example.net.")])
                .await
                .unwrap();
            let to = store.find_zone(&zone).await.unwrap().unwrap().gen;
            let by_points = records_since_within(store, &zone, from, to, 1_000)
                .await
                .unwrap();
            let by_scan = records_since_within(store, &zone, from, to, 1)
                .await
                .unwrap();
            let by_points = listed(by_points).expect("every generation accounted for");
            assert_eq!(
                by_points.len(),
                4,
                "two merges, each with its SOA: {by_points:?}"
            );
            assert_eq!(listed(by_scan), Some(by_points));
            // A generation nobody accounts for (a writer without records
            // that may have been ours): both say start over.
            store.next_seq().await.unwrap();
            merge_as_foreign_writer(store, &zone, &[a_node("z.example.net.")])
                .await
                .unwrap();
            let to = store.find_zone(&zone).await.unwrap().unwrap().gen;
            assert!(records_since_within(store, &zone, from, to, 1_000)
                .await
                .unwrap()
                .is_none());
            assert!(records_since_within(store, &zone, from, to, 1)
                .await
                .unwrap()
                .is_none());
            db.drop_db().await;
        });
    }
}
