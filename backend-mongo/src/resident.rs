//! Reads for servers that hold whole zones in memory (resident zones): the
//! nodes of a version with their denial keys, and one name read again.
//!
//! ```text
//!  keyed_zone_cursor(zone) ── {zone, ver} scan, no sort, 4096 a batch ──► KeyedNode…
//!  keyed_nodes(zone, name, nsec3) ── _id point read of the node
//!                     (+ the NSEC3 node of hash label `name`'s first label,
//!                      when asked: its _id has four parts) ──► KeyedNode…
//! ```
//!
//! A `KeyedNode` is a node with what a denial lookup needs beside it: its
//! `dk` and whether it is an NSEC3 node (which ordinary point reads never
//! find, docs/schema.md).

use crate::dnssec_store::nsec3_node_id;
use crate::schema::{self, node_id, Node, ZoneInfo};
use crate::store::{Store, StoreError};
use crate::Name;
use futures::stream::{BoxStream, StreamExt};
use mongodb::bson::{doc, Document};

/// Nodes per round trip of a zone load (a few MB at most).
const LOAD_BATCH: u32 = 4096;

/// A node with its denial key and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedNode {
    /// The node as the answer path sees it.
    pub node: Node,
    /// Its denial key (`dk`): set on nodes owning NSEC or NSEC3.
    pub dk: Option<String>,
    /// True for an NSEC3 node (stored under [`nsec3_node_id`]).
    pub nsec3: bool,
}

/// The nodes of one zone version with their keys, one at a time.
pub type KeyedStream = BoxStream<'static, Result<KeyedNode, StoreError>>;

fn keyed_from_doc(d: &Document) -> Result<KeyedNode, StoreError> {
    let node = schema::node_from_doc(d)?;
    let nsec3 = d.get_str("_id").unwrap_or("").split(' ').count() == 4;
    Ok(KeyedNode {
        node,
        dk: d.get_str("dk").ok().map(str::to_string),
        nsec3,
    })
}

impl Store {
    /// Every node of the served version of `zone` with its denial key, as
    /// the database returns them (one scan). No order is asked: on MongoDB
    /// the `{zone, ver}` range of the `{zone, ver, ck}` index comes in
    /// canonical order anyway, while on FerretDB a sort doubled the load
    /// time (100,007 nodes: 16 s unsorted, 34 s sorted; debug build).
    pub async fn keyed_zone_cursor(&self, zone: &ZoneInfo) -> Result<KeyedStream, StoreError> {
        // No maxTimeMS: a resident load of a large zone may outlast any
        // transfer's limit, and it is paced, not abandoned.
        let cursor = self.version_documents(zone, (LOAD_BATCH, None)).await?;
        Ok(cursor.map(|d| keyed_from_doc(&d?)).boxed())
    }

    /// The nodes stored for `name` in the served version of `zone`: the
    /// ordinary node, and with `nsec3` also the NSEC3 node whose hash is
    /// `name`'s first label (a name right below the apex). One `_id` point
    /// read each.
    pub async fn keyed_nodes(
        &self,
        zone: &ZoneInfo,
        name: &Name,
        nsec3: bool,
    ) -> Result<Vec<KeyedNode>, StoreError> {
        let mut ids = vec![node_id(&zone.apex, zone.ver, name)];
        if nsec3 && name.parent().as_ref() == Some(&zone.apex) {
            if let Some(label) = name.to_string().split('.').next() {
                ids.push(nsec3_node_id(&zone.apex, zone.ver, label));
            }
        }
        let reads = ids.into_iter().map(|id| async move {
            let find = self.nodes.find_one(doc! {"_id": id});
            match self.read_deadline {
                Some(d) => find.max_time(d).await,
                None => find.await,
            }
        });
        let mut out = Vec::new();
        for found in futures::future::try_join_all(reads)
            .await?
            .into_iter()
            .flatten()
        {
            out.push(keyed_from_doc(&found)?);
        }
        Ok(out)
    }
}
