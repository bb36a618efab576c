//! Reads for zone transfers: the nodes of one version as the cursor
//! delivers them, and whether that version began to be deleted.
//!
//! ```text
//!  zone_cursor(zone)     ── {zone, ver} scan, in no order, batches of
//!                           TRANSFER_BATCH, maxTimeMS TRANSFER_MAX_TIME
//!                           ──► NodeStream (one node at a time)
//!  version_deleting(zone) ── zones._id point read ──► true if the document is
//!                           gone or its `deleting` lists zone.ver
//! ```
//!
//! A transfer holds at most one batch in memory, whatever the zone's size.
//! It asks for no order: AXFR needs none beyond the SOA first and last
//! (RFC 5936 §2.2), which the transfer sends itself, and a sort would make
//! a database without a usable index (FerretDB) read and sort the whole
//! version before its first batch (seconds for a large zone).
//! The `deleting` list is written before the first node of a version is
//! deleted (docs/schema.md), so a transfer that checks it after its last
//! node knows whether the cursor may have missed nodes.

use crate::schema::{self, Node, ZoneInfo};
use crate::store::{Store, StoreError};
use futures::stream::{BoxStream, StreamExt};
use mongodb::bson::{doc, Bson};
use std::time::Duration;

/// Nodes fetched from the database per round trip during a transfer.
pub const TRANSFER_BATCH: u32 = 256;

/// The `maxTimeMS` of a transfer's cursor (the zone's nodes, the journal's
/// entries), and the server's limit on a whole transfer. A cursor's
/// maxTimeMS is the database's working time summed over all its batches
/// (the time a slow client keeps it waiting between batches does not
/// count), so it can never run out before the transfer's own limit on
/// the wall clock: a legitimate transfer that finishes in time never hits
/// it. What it bounds is the database's work for a transfer the server
/// gave up on (a cursor whose killCursors was lost with its connection
/// would otherwise go on scanning) and a batch that never comes back.
pub const TRANSFER_MAX_TIME: Duration = Duration::from_secs(300);

/// The nodes of one zone version, in the order the database keeps them,
/// one at a time.
pub type NodeStream = BoxStream<'static, Result<Node, StoreError>>;

impl Store {
    /// Every node of the served version of `zone`, in no particular order,
    /// as the database returns them.
    pub async fn zone_cursor(&self, zone: &ZoneInfo) -> Result<NodeStream, StoreError> {
        let batch = (TRANSFER_BATCH, Some(TRANSFER_MAX_TIME));
        let cursor = self.version_documents(zone, batch).await?;
        Ok(cursor.map(|d| Ok(schema::node_from_doc(&d?)?)).boxed())
    }

    /// The documents of the served version of `zone`, `batch.0` per round
    /// trip, in no order (transfers and resident zones need none), with
    /// `batch.1` as maxTimeMS when given.
    pub(crate) async fn version_documents(
        &self,
        zone: &ZoneInfo,
        batch: (u32, Option<Duration>),
    ) -> Result<mongodb::Cursor<mongodb::bson::Document>, StoreError> {
        let mut find = self
            .nodes
            .find(doc! {"zone": zone.apex.to_string(), "ver": zone.ver})
            .batch_size(batch.0);
        if let Some(limit) = batch.1 {
            find = find.max_time(limit);
        }
        Ok(find.await?)
    }

    /// True when `zone.ver` began to be deleted (listed in the zone
    /// document's `deleting`) or the zone document is gone.
    pub async fn version_deleting(&self, zone: &ZoneInfo) -> Result<bool, StoreError> {
        let found = self
            .zones
            .find_one(doc! {"_id": zone.apex.to_string()})
            .await?;
        let Some(d) = found else {
            return Ok(true);
        };
        Ok(match d.get("deleting") {
            Some(Bson::Array(list)) => list.iter().any(|v| schema::bson_int(v) == Some(zone.ver)),
            _ => false,
        })
    }
}
