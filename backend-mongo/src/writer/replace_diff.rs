//! A replace of a small zone, journaled: its difference from the version
//! it replaces, stored at the switch. The same for any new version of a
//! small zone (`secure-zone`, `unsecure-zone`).
//!
//! ```text
//!  publish_locked (Replace, switching), under the zone lock
//!    ─► the zone as served now: version V, generation G (none: a new zone)
//!    ─► V and the new version in one read, at most MAX_IMAGED_NODES
//!       nodes each, within REPLACE_DIFF_WAIT (a big zone, or FerretDB
//!       scanning a big collection: not journaled, logged)
//!    ─► node_records of each ─► (removed, added), V's SOA
//!  ...the switch... ─► journal_replace: exact when the zone was still at
//!    G, its serial set there, no merge live
//! ```
//!
//! The read holds the zone lock up to REPLACE_DIFF_WAIT longer. It is not
//! made before taking it: a signed new version's SOA must stay ahead of
//! the served serial, which other writers move while they may publish.
//! On MongoDB the read is an index range of the two versions; FerretDB
//! scans the collection, so beside big zones it gives up after the wait and
//! secondaries get the whole zone, as before.

use super::node_images::{node_records, soa_record};
use super::{merge_live, ZoneWriter, MAX_IMAGED_NODES, SERIAL_GEN};
use crate::dnssec_store::FullNode;
use crate::schema::int_field;
use crate::store::StoreError;
use crate::Name;
use dns::journal::{JournalEntry, JournalRecord};
use mongodb::bson::{doc, Document};
use std::collections::BTreeSet;
use std::time::Duration;

/// How long a replace may spend reading the two versions to diff them.
pub const REPLACE_DIFF_WAIT: Duration = Duration::from_secs(2);

/// What a replace changed against the version served before it.
#[derive(Debug)]
pub(super) struct ReplaceDiff {
    /// The zone's generation when the old version was read.
    base_gen: i64,
    /// The old version's apex SOA.
    from_soa: JournalRecord,
    removed: Vec<JournalRecord>,
    added: Vec<JournalRecord>,
}

impl ZoneWriter {
    /// Replace only, before the switch: the difference from the version
    /// served now, when it can be read in time (see the module
    /// documentation); a failure only costs secondaries a whole zone.
    pub(super) async fn diff_replaced(&self) -> Option<ReplaceDiff> {
        match tokio::time::timeout(REPLACE_DIFF_WAIT, self.read_diff()).await {
            Ok(Ok(diff)) => diff,
            Ok(Err(e)) => {
                tracing::warn!(zone = %self.zone, error = %e, "the replace could not be diffed: secondaries get the whole zone");
                None
            }
            Err(_) => {
                tracing::info!(zone = %self.zone, wait = ?REPLACE_DIFF_WAIT, "reading the versions to diff the replace took too long: not journaled, secondaries get the whole zone");
                None
            }
        }
    }

    async fn read_diff(&self) -> Result<Option<ReplaceDiff>, StoreError> {
        let current = self
            .store
            .zones
            .find_one(doc! {"_id": self.zone.to_string()})
            .await?;
        let field = |k: &str| current.as_ref().and_then(|d| int_field(d, k));
        let (Some(old_ver), Some(base_gen)) = (field("ver"), field("gen")) else {
            return Ok(None);
        };
        if old_ver == self.ver() {
            return Ok(None);
        }
        let pair = (old_ver, self.ver());
        let read = self
            .store
            .read_versions_upto(&self.zone, pair, MAX_IMAGED_NODES)
            .await?;
        let Some((old, new)) = read else {
            tracing::info!(zone = %self.zone, max = MAX_IMAGED_NODES, "a version of the replace holds too many nodes to diff: not journaled, secondaries get the whole zone");
            return Ok(None);
        };
        let Some(from_soa) = apex_soa(&self.zone, &old) else {
            return Ok(None);
        };
        let (old, new) = (records(&self.zone, &old), records(&self.zone, &new));
        Ok(Some(ReplaceDiff {
            base_gen,
            from_soa,
            removed: old.difference(&new).cloned().collect(),
            added: new.difference(&old).cloned().collect(),
        }))
    }

    /// Stores the replace's entry, published at `gen` as version `ver`
    /// (under the zone lock; `current` the zone document read before the
    /// publish); logged, not returned, when it fails.
    pub(super) async fn journal_replace(
        &self,
        diff: ReplaceDiff,
        current: Option<&Document>,
        gen: i64,
        ver: i64,
    ) {
        let field = |k: &str| current.and_then(|d| int_field(d, k));
        let exact = field("gen") == Some(diff.base_gen)
            && field(SERIAL_GEN) == Some(diff.base_gen)
            && !merge_live(current);
        let r = async {
            let Some(to_soa) = self.store.apex_soa_record(&self.zone, ver).await? else {
                return Ok(());
            };
            let entry = JournalEntry {
                gen,
                base_gen: diff.base_gen,
                exact,
                from_soa: diff.from_soa,
                to_soa,
                removed: diff.removed,
                added: diff.added,
            };
            self.store.append_journal(&self.zone, &entry).await
        }
        .await;
        if let Err(e) = r {
            tracing::warn!(zone = %self.zone, error = %e, "the replace could not be journaled");
        }
    }
}

/// Every record of `nodes` as a transfer sends it (the apex SOA aside).
fn records(zone: &Name, nodes: &[FullNode]) -> BTreeSet<JournalRecord> {
    nodes
        .iter()
        .flat_map(|n| node_records(zone, Some(n)))
        .collect()
}

/// The apex SOA among `nodes`.
fn apex_soa(zone: &Name, nodes: &[FullNode]) -> Option<JournalRecord> {
    soa_record(nodes.iter().find(|n| n.name == *zone && !n.nsec3)?)
}
