//! Reads of signed nodes: the denial lookup the answer path asks, and the
//! signer's reads of whole versions, single nodes and the chain.
//!
//! ```text
//!  denial(zone, key, wrap) ── nodes {zone, ver, dk ≤ key} sort dk desc limit 1
//!                             (index zone_ver_dk) ──► the covering/matching Node
//!  read_version(zone, ver) ── one unsorted cursor ──► FullNodes, canonical order
//!  read_versions_upto(zone, (a, b), max) ── both versions in one cursor, or None
//!  read_full_node(s)(_by_id) ── FerretDB: point_read_nodes, {_id} point
//!                               reads, READS_AT_ONCE in flight
//!                             ── MongoDB: find_nodes_in, one {_id: $in}
//!                               find per IDS_PER_FIND ids
//!  read_chain(zone, ver) ── nodes {dk > ""}, NSEC/NSEC3 only ──► the chain
//! ```

use super::node::{full_node_from_doc, FullNode};
use crate::schema::{self, int_field, node_id, ZoneInfo};
use crate::store::{Store, StoreError};
use crate::{Name, Node};
use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use std::collections::HashMap;

/// Point reads in flight at once when many nodes are read.
pub const READS_AT_ONCE: usize = 32;

/// `_id`s asked in one `$in` find on MongoDB, whose `_id` index serves
/// each of them: a 2,000-name message read in four round trips.
pub const IDS_PER_FIND: usize = 500;

impl Store {
    /// The NSEC or NSEC3 node with the greatest denial key not above `key`
    /// in the served version of `zone`: the record that matches `key` or
    /// covers it. With `wrap`, when no key is that small, the greatest of
    /// all (the last NSEC3 covers the hashes before the first).
    pub async fn denial(
        &self,
        zone: &ZoneInfo,
        key: &str,
        wrap: bool,
    ) -> Result<Option<Node>, StoreError> {
        let apex = zone.apex.to_string();
        // The query timeout bounds these on the server too (`maxTimeMS`).
        let seek = |filter: Document| {
            let q = self
                .nodes
                .find_one(filter)
                .sort(doc! {"zone": -1, "ver": -1, "dk": -1});
            match self.read_deadline {
                Some(d) => q.max_time(d),
                None => q,
            }
        };
        let found = seek(doc! {"zone": &apex, "ver": zone.ver, "dk": {"$lte": key}}).await?;
        let found = match found {
            Some(d) => Some(d),
            None if wrap => seek(doc! {"zone": &apex, "ver": zone.ver, "dk": {"$gt": ""}}).await?,
            None => None,
        };
        Ok(match found {
            Some(d) => Some(schema::node_from_doc(&d)?),
            None => None,
        })
    }

    /// Every node of version `ver` of `zone` with signatures and denial
    /// keys, in canonical order (NSEC3 nodes included, marked).
    ///
    /// One unsorted cursor, sorted here: FerretDB sorts in memory anyway
    /// (it pushes no sort down to SQLite but `$natural`), and MongoDB would
    /// need the `zone_ver_ck` index walk for nothing. `zone`, `ver` and `ck`
    /// are left out of the documents sent (the caller knows the first two;
    /// the order is computed from `name`). On FerretDB this read costs about
    /// 0.2 ms of the database's CPU per document of the collection, whatever
    /// the filter, batch size or projection (it decodes every document's
    /// JSON; only `{_id: <string>}` is pushed down), so it is bounded by the
    /// collection's size, not by round trips (`docs/benchmarks.md`).
    pub async fn read_version(&self, zone: &Name, ver: i64) -> Result<Vec<FullNode>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver})
            .projection(doc! {"zone": 0, "ver": 0, "ck": 0})
            .batch_size(1000)
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(full_node_from_doc(&d)?);
        }
        out.sort_by_cached_key(|n| (n.name.canonical_key(), n.nsec3));
        Ok(out)
    }

    /// Versions `a` and `b` of `zone`, in one read: `None` when either
    /// holds more than `max` nodes.
    pub async fn read_versions_upto(
        &self,
        zone: &Name,
        (a, b): (i64, i64),
        max: usize,
    ) -> Result<Option<(Vec<FullNode>, Vec<FullNode>)>, StoreError> {
        let limit = i64::try_from(2 * max + 2).unwrap_or(i64::MAX);
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": {"$in": [a, b]}})
            .projection(doc! {"zone": 0, "ck": 0})
            .limit(limit)
            .batch_size(1000)
            .await?;
        let (mut first, mut second) = (Vec::new(), Vec::new());
        while let Some(d) = cursor.try_next().await? {
            let ver = int_field(&d, "ver");
            let node = full_node_from_doc(&d)?;
            match ver == Some(a) {
                true => first.push(node),
                false => second.push(node),
            }
            if first.len() > max || second.len() > max {
                return Ok(None);
            }
        }
        Ok(Some((first, second)))
    }

    /// One ordinary node of version `ver` with signatures and denial key.
    pub async fn read_full_node(
        &self,
        zone: &Name,
        ver: i64,
        name: &Name,
    ) -> Result<Option<FullNode>, StoreError> {
        let found = self
            .nodes
            .find_one(doc! {"_id": node_id(zone, ver, name)})
            .await?;
        found.as_ref().map(full_node_from_doc).transpose()
    }

    /// The node (ordinary or NSEC3) stored under `_id` `id`.
    pub async fn read_full_node_by_id(&self, id: &str) -> Result<Option<FullNode>, StoreError> {
        let found = self.nodes.find_one(doc! {"_id": id}).await?;
        found.as_ref().map(full_node_from_doc).transpose()
    }

    /// The nodes stored under the `_id`s `ids` (`None` for those missing),
    /// in their order: [`Store::point_read_nodes`] on FerretDB, whose `_id`
    /// index serves only exact equality; [`Store::find_nodes_in`] on
    /// MongoDB, a round trip per [`IDS_PER_FIND`] ids.
    pub async fn read_full_nodes_by_id(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        match self.ferretdb {
            true => self.point_read_nodes(ids).await,
            false => self.find_nodes_in(ids).await,
        }
    }

    /// [`Store::read_full_nodes_by_id`] by point lookups,
    /// [`READS_AT_ONCE`] in flight.
    pub async fn point_read_nodes(
        &self,
        ids: &[String],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(READS_AT_ONCE) {
            let reads = chunk.iter().map(|id| self.read_full_node_by_id(id));
            out.extend(futures::future::try_join_all(reads).await?);
        }
        Ok(out)
    }

    /// [`Store::read_full_nodes_by_id`] by one `{_id: {$in}}` find per
    /// [`IDS_PER_FIND`] ids (a scan of the collection on FerretDB).
    pub async fn find_nodes_in(&self, ids: &[String]) -> Result<Vec<Option<FullNode>>, StoreError> {
        let mut found: HashMap<String, FullNode> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(IDS_PER_FIND) {
            let mut cursor = self.nodes.find(doc! {"_id": {"$in": chunk}}).await?;
            while let Some(d) = cursor.try_next().await? {
                let id = d.get_str("_id").unwrap_or_default().to_string();
                found.insert(id, full_node_from_doc(&d)?);
            }
        }
        Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
    }

    /// The ordinary nodes `names` of version `ver`, in their order, read as
    /// [`Store::read_full_nodes_by_id`] reads.
    pub async fn read_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        names: &[Name],
    ) -> Result<Vec<Option<FullNode>>, StoreError> {
        let ids: Vec<String> = names.iter().map(|n| node_id(zone, ver, n)).collect();
        self.read_full_nodes_by_id(&ids).await
    }

    /// The NSEC or NSEC3 chain of version `ver`: every node with a denial
    /// key, with only its NSEC/NSEC3 RRset read.
    pub async fn read_chain(&self, zone: &Name, ver: i64) -> Result<Vec<FullNode>, StoreError> {
        let mut cursor = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver, "dk": {"$gt": ""}})
            .projection(doc! {"_id": 1, "name": 1, "dk": 1, "rrsets.NSEC": 1, "rrsets.NSEC3": 1})
            .await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(full_node_from_doc(&d)?);
        }
        Ok(out)
    }
}
