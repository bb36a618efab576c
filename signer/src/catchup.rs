//! Catching a new version up with what merge writers wrote into the served
//! one while it was being built (`secure-zone`, `unsecure-zone`).
//!
//! ```text
//!  pass(): zones._id ─► still serving `from`? (else: replaced, start over)
//!     ─► change records of gen seen+1..=now (every one accounted for,
//!        else start over) ─► names
//!     ─► names in batches of COPY_BATCH: each read from `from` and `to`
//!        (point reads); ordinary RRsets from `from`, chain fields (and the
//!        signatures of RRsets that did not change) from `to`
//!        ─► names gone from `from`: deleted from `to` (one command)
//!        ─► signed: MergeSigner::settle_known signs and writes each
//!           changed name once (a name losing a type is replaced first)
//!        ─► plain: changed names replaced whole (bulk upserts)
//!  the caller repeats passes until one is small, then takes the zone lock
//!  (no writer can publish), runs a last pass and switches
//! ```

use crate::merge::{same_node, Known, MergeSigner};
use crate::plan::signer_owned;
use crate::SignError;
use backend_mongo::dnssec::{FullNode, SignedRRset};
use backend_mongo::{Store, StoreError};
use dns::{ChangeRecord, Name, RType, ZoneInfo};

/// Most generations looked at record by record in one pass; more: not
/// accounted for. A pass after a long signing covers every generation
/// since it began (two importers publishing every 200 ms make 10 a second).
pub(crate) const MAX_GENERATIONS: i64 = 65_536;

/// Change records read at once (point reads by `_id`, concurrently).
const RECORDS_AT_ONCE: i64 = 256;

/// Names a pass copies in one batch: read by point reads
/// (`READS_AT_ONCE` in flight), written by bulk commands.
const COPY_BATCH: usize = 1000;

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
        for chunk in names.chunks(COPY_BATCH) {
            self.copy_batch(chunk).await?;
            if self.signer.as_ref().is_some_and(|s| s.needs_full_resign()) {
                return Ok(Err(StartOver(
                    "a delegation or DNAME appeared above existing names".into(),
                )));
            }
        }
        self.seen = now.gen;
        self.copied += names.len() as u64;
        Ok(Ok(names.len()))
    }

    /// Copies `names` from the served version into the new one (see
    /// [`copied_node`]): two point reads a name, then, signed, each
    /// changed name written once with its signatures (inserted when new);
    /// plain, replaced or inserted whole. Names gone from the served
    /// version are deleted from the new one first (the signer then finds
    /// them absent and relinks the chain around them).
    async fn copy_batch(&mut self, names: &[Name]) -> Result<(), SignError> {
        let (store, zone) = (self.store, self.zone);
        let src = store.read_full_nodes(zone, self.from, names).await?;
        let dst = store.read_full_nodes(zone, self.to, names).await?;
        let signed = self.signer.is_some();
        let mut gone = Vec::new();
        let mut known = Vec::with_capacity(names.len());
        for ((name, src), dst) in names.iter().zip(src).zip(dst) {
            let node = src.map(|s| copied_node(zone, &s, dst.as_ref(), signed));
            if node.is_none() && dst.is_some() {
                gone.push(name.clone());
            }
            let stored = if node.is_none() { None } else { dst };
            known.push(Known {
                name: name.clone(),
                stored,
                node,
            });
        }
        store.delete_nodes(zone, self.to, &gone).await?;
        match self.signer.as_mut() {
            Some(signer) => {
                let known = replace_dropped_types(store, zone, self.to, known).await?;
                signer.settle_known(store, known).await?;
            }
            None => {
                let changed: Vec<FullNode> = known
                    .into_iter()
                    .filter_map(|k| k.node.filter(|n| !same_node(k.stored.as_ref(), n)))
                    .collect();
                store.put_full_nodes(zone, self.to, &changed).await?;
            }
        }
        Ok(())
    }
}

/// `src`, a node of the served version, as the new version must hold it:
/// its ordinary RRsets, with the new version's chain fields and apex SOA
/// kept from `dst` (signed: also its signatures of the RRsets that did not
/// change; the rest are signed by the caller).
fn copied_node(zone: &Name, src: &FullNode, dst: Option<&FullNode>, signed: bool) -> FullNode {
    let apex = src.name == *zone;
    let ours = |t: RType| signer_owned(t) || (apex && t == RType::SOA);
    let mut rrsets: Vec<SignedRRset> = dst
        .iter()
        .flat_map(|d| d.rrsets.iter())
        .filter(|r| ours(r.rrset.rtype) && (signed || r.rrset.rtype == RType::SOA))
        .cloned()
        .collect();
    for r in src.rrsets.iter().filter(|r| !ours(r.rrset.rtype)) {
        let kept = dst
            .and_then(|d| d.get(r.rrset.rtype))
            .filter(|d| signed && d.rrset == r.rrset);
        rrsets.push(kept.cloned().unwrap_or_else(|| SignedRRset {
            rrset: r.rrset.clone(),
            sigs: Vec::new(),
            sd: None,
        }));
    }
    FullNode {
        name: src.name.clone(),
        rrsets,
        dk: dst.and_then(|d| d.dk.clone()).filter(|_| signed),
        nsec3: false,
    }
}

/// The signer writes a stored node by setting its RRsets, never removing
/// one: a node that must lose a type of what is stored is replaced first
/// (unsigned; the signer signs it next), and is then known as that.
async fn replace_dropped_types(
    store: &Store,
    zone: &Name,
    ver: i64,
    mut known: Vec<Known>,
) -> Result<Vec<Known>, StoreError> {
    let drops = |k: &Known| match (&k.stored, &k.node) {
        (Some(s), Some(n)) => s.rrsets.iter().any(|r| n.get(r.rrset.rtype).is_none()),
        _ => false,
    };
    let replaced: Vec<FullNode> = known
        .iter()
        .filter(|k| drops(k))
        .filter_map(|k| k.node.clone())
        .collect();
    store.put_full_nodes(zone, ver, &replaced).await?;
    for k in known.iter_mut().filter(|k| drops(k)) {
        k.stored = k.node.clone();
    }
    Ok(known)
}

#[cfg(test)]
mod tests {
    use super::*;
    use backend_mongo::testing::{
        block_on, delete_nodes_as_foreign_writer, example_net, merge_as_foreign_writer,
        show_generation, TestDb,
    };
    use backend_mongo::NodeWrite;
    use dns::dnssec::rrset_digest;
    use dns::edit::RecordEdit;
    use dns::RRset;
    use std::collections::BTreeMap;

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

    fn named(name: &str, rrsets: Vec<RRset>) -> NodeWrite {
        NodeWrite {
            name: name.parse().unwrap(),
            rrsets,
        }
    }

    fn set(rtype: RType, rdata: &[u8]) -> RRset {
        RRset {
            rtype,
            ttl: 300,
            rdata: vec![rdata.to_vec().into_boxed_slice()],
        }
    }

    /// The nodes of version `ver` by name.
    async fn version(store: &Store, zone: &Name, ver: i64) -> BTreeMap<Name, FullNode> {
        let nodes = store.read_version(zone, ver).await.unwrap();
        nodes.into_iter().map(|n| (n.name.clone(), n)).collect()
    }

    /// A secured zone's served version copied into a new one, then edited
    /// by writers that do not sign (a name added, an RRset dropped from a
    /// name that keeps another, a name deleted, a record added to an
    /// existing RRset): one pass brings the new version to the same
    /// records, each RRset signed for its content and the NSEC chain
    /// closed over exactly its names. The dropped RRset is gone, not left
    /// behind by the signer's field-by-field write.
    #[test]
    fn a_pass_copies_added_changed_dropped_and_deleted_names_signed() {
        block_on(async {
            let db = TestDb::new("catchup_pass").await;
            let store = &db.store;
            let (zone, mut nodes) = example_net();
            nodes.push(named(
                "multi.example.net.",
                vec![set(RType::A, &[192, 0, 2, 7]), set(RType::TXT, b"\x03two")],
            ));
            nodes.push(named(
                "gone.example.net.",
                vec![set(RType::A, &[192, 0, 2, 8])],
            ));
            db.write_zone(&zone, &nodes).await;
            let options = crate::SecureOptions::ecdsa(None);
            crate::secure_zone(store, &zone, &options, &crate::NoProgress)
                .await
                .expect("secure-zone");
            let served = store.find_zone(&zone).await.unwrap().unwrap();
            let to = served.ver + 1_000;
            let copy: Vec<FullNode> = version(store, &zone, served.ver)
                .await
                .into_values()
                .collect();
            store.insert_full_nodes(&zone, to, &copy).await.unwrap();

            let added = named("new.example.net.", vec![set(RType::A, &[192, 0, 2, 9])]);
            let more = named("ns1.example.net.", vec![set(RType::A, &[192, 0, 2, 10])]);
            merge_as_foreign_writer(store, &zone, &[added, more])
                .await
                .unwrap();
            let multi: Name = "multi.example.net.".parse().unwrap();
            let drop_txt = RecordEdit::DeleteRRset {
                name: multi.clone(),
                rtype: RType::TXT,
            };
            store.edit_zone(&zone, &[drop_txt]).await.unwrap();
            let gone: Name = "gone.example.net.".parse().unwrap();
            delete_nodes_as_foreign_writer(store, &zone, std::slice::from_ref(&gone))
                .await
                .unwrap();

            let signer = MergeSigner::new(store, &zone, to).await.unwrap();
            let mut catch_up = CatchUp::new(store, &zone, &served, to, signer);
            let copied = catch_up.pass().await.unwrap().expect("no start over");
            assert!(copied >= 4, "the four edited names copied: {copied}");

            let now = store.find_zone(&zone).await.unwrap().unwrap();
            let src = version(store, &zone, now.ver).await;
            let dst = version(store, &zone, to).await;
            assert_eq!(
                dst.keys().collect::<Vec<_>>(),
                src.keys().collect::<Vec<_>>(),
                "the same names"
            );
            let ordinary = |n: &FullNode| -> Vec<RRset> {
                let mut v: Vec<RRset> = n
                    .rrsets
                    .iter()
                    .filter(|r| !signer_owned(r.rrset.rtype) && r.rrset.rtype != RType::SOA)
                    .map(|r| r.rrset.clone())
                    .collect();
                v.sort_by_key(|r| r.rtype.0);
                v
            };
            for (name, n) in &dst {
                assert_eq!(
                    ordinary(n),
                    ordinary(&src[name]),
                    "{name}: the same records"
                );
                for r in &n.rrsets {
                    let digest = rrset_digest(r.rrset.ttl, &r.rrset.rdata);
                    assert!(!r.sigs.is_empty(), "{name} {:?}: signed", r.rrset.rtype);
                    assert_eq!(
                        r.sd,
                        Some(digest),
                        "{name} {:?}: signed for its content",
                        r.rrset.rtype
                    );
                }
            }
            assert!(
                dst[&multi].get(RType::TXT).is_none(),
                "the dropped TXT is gone"
            );
            // The NSEC chain: each name's next is the following name, the
            // last one's the apex.
            let names: Vec<&Name> = dst.keys().collect();
            let mut by_key: Vec<&Name> = names.clone();
            by_key.sort_by_key(|n| n.canonical_key());
            for (i, name) in by_key.iter().enumerate() {
                let nsec = dst[*name]
                    .get(RType::NSEC)
                    .expect("every name in the chain");
                let (next, _) = Name::from_wire_prefix(&nsec.rrset.rdata[0]).unwrap();
                assert_eq!(&next, by_key[(i + 1) % by_key.len()], "{name}: NSEC next");
            }
            db.drop_db().await;
        });
    }
}
