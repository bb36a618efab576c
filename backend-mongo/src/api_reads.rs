//! Streamed reads for the HTTP API: the served zones in name order, and
//! the nodes of one zone version in canonical order, a batch at a time.
//!
//! ```text
//!  zone_list_stream() ── zones {ver exists}, sorted by _id, batches of
//!                        API_BATCH ──► ZoneStream (one zone at a time)
//!  version_stream(zone, ver) ── nodes {zone, ver}, sorted by ck, batches of
//!                        API_BATCH ──► FullNodeStream (one node at a time)
//!  both: maxTimeMS = the listing deadline (active time on the database,
//!        summed over the cursor's batches; a slow reader's waits do not count)
//! ```
//!
//! Memory holds one batch, whatever the number of zones or names: the
//! caller turns each item into its JSON as it comes.

use crate::dnssec_store::{full_node_from_doc, FullNode};
use crate::schema::{self, ZoneInfo};
use crate::store::{Store, StoreError};
use crate::Name;
use futures::stream::{BoxStream, StreamExt};
use mongodb::bson::doc;

/// Documents fetched from the database per round trip by an API read.
pub const API_BATCH: u32 = 100;

/// Served zones, one at a time as the cursor delivers them.
pub type ZoneStream = BoxStream<'static, Result<ZoneInfo, StoreError>>;

/// Nodes of one version with their signatures, one at a time.
pub type FullNodeStream = BoxStream<'static, Result<FullNode, StoreError>>;

impl Store {
    /// Every served zone in name order (of their `_id`), streamed.
    pub async fn zone_list_stream(&self) -> Result<ZoneStream, StoreError> {
        let mut find = self
            .zones
            .find(doc! {"ver": {"$exists": true}})
            .sort(doc! {"_id": 1})
            .batch_size(API_BATCH);
        if let Some(d) = self.listing_deadline() {
            find = find.max_time(d);
        }
        let cursor = find.await?;
        Ok(cursor.map(|d| Ok(schema::zone_from_doc(&d?)?)).boxed())
    }

    /// Every node of version `ver` of `zone` in canonical order (NSEC3
    /// nodes included: the caller leaves out what it does not show),
    /// streamed.
    pub async fn version_stream(
        &self,
        zone: &Name,
        ver: i64,
    ) -> Result<FullNodeStream, StoreError> {
        let mut find = self
            .nodes
            .find(doc! {"zone": zone.to_string(), "ver": ver})
            .sort(doc! {"ck": 1})
            .batch_size(API_BATCH);
        if let Some(d) = self.listing_deadline() {
            find = find.max_time(d);
        }
        let cursor = find.await?;
        Ok(cursor.map(|d| full_node_from_doc(&d?)).boxed())
    }
}
