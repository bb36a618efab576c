//! DNSSEC storage: keys, signatures and NSEC/NSEC3 chains as MongoDB
//! documents, and the reads of them; their writes into zone versions are
//! the writer's (`writer/signed_nodes.rs`, `writer/publish_in_place.rs`).
//! The wire maths they are made of (key tags, DS, NSEC3 hashes, bitmaps) is
//! `dns::dnssec`.
//!
//! ```text
//!  keys   { _id, zone, flags 256|257, alg, tag, pub, priv (PKCS#8), state, created,
//!           since?, ds_seen?, ds_ttl?, roll? }                          keys.rs
//!  zones  { …, dnssec: { secured, cds, nsec3?: { iter, salt, optout }, policy?: {…},
//!           parents?: [addr], marked?, seen_gen? } }                    config.rs
//!  nodes  { …, dk?: "<denial key>", sx?: <earliest RRSIG expiration, never later>,
//!           rrsets: { A: { ttl, rd, sigs: [RRSIG rdata…], sd: <digest> }, NSEC: {…} } }
//!  nodes  { _id: "<zone> <ver> nsec3 <b32hex>", name: "<b32hex>.<zone>", dk: "<b32hex>",
//!           rrsets: { NSEC3: { ttl, rd, sigs, sd } } }        one per NSEC3 owner
//!         FullNode ◄──► document: node.rs      NodeChange (a field-wise edit): change.rs
//!
//!  denial(zone, key) ── {zone, ver, dk ≤ key} sort dk desc limit 1 ──► covering/matching node
//!  read_version, read_full_node(s), read_chain ──► FullNode          reads.rs
//! ```
//!
//! `dk` ("denial key") is set only on the nodes that own the zone's NSEC or
//! NSEC3 records: the canonical key `ck` for NSEC, the base32hex hash for
//! NSEC3 (base32hex keeps the order of the hash bytes). The greatest `dk`
//! not above a key is the NSEC/NSEC3 record that matches or covers it, so
//! every denial proof is one indexed lookup (`zone_ver_dk`).

mod change;
mod config;
mod keys;
mod node;
mod reads;

pub use change::{changed_owners, NodeChange, Resigned};
pub use config::{DnssecConfig, Nsec3Config};
pub(crate) use keys::key_doc;
pub use keys::{alg, KeyState, StoredKey, KEYS};
pub(crate) use node::full_node_from_doc;
pub use node::{earliest_of, nsec3_node_id, signed_rrset_doc, FullNode, SignedRRset};
pub use reads::{IDS_PER_FIND, READS_AT_ONCE};

use crate::store::{Store, StoreError};
use mongodb::bson::{doc, Document};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

impl Store {
    /// Creates the DNSSEC indexes (run with [`Store::ensure_indexes`]):
    /// `nodes {zone, ver, dk}` for denial lookups, `nodes {zone, ver, sx}`
    /// for signature refresh, `keys {zone}`.
    pub async fn ensure_dnssec_indexes(&self) -> Result<(), StoreError> {
        let by_dk = IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "dk": 1})
            .options(
                IndexOptions::builder()
                    .name("zone_ver_dk".to_string())
                    .build(),
            )
            .build();
        self.nodes.create_index(by_dk).await?;
        // Signature refresh reads only the nodes due (`Store::due_node_ids`).
        let by_sx = IndexModel::builder()
            .keys(doc! {"zone": 1, "ver": 1, "sx": 1})
            .options(
                IndexOptions::builder()
                    .name("zone_ver_sx".to_string())
                    .sparse(true)
                    .build(),
            )
            .build();
        self.nodes.create_index(by_sx).await?;
        let keys = self.db.collection::<Document>(KEYS);
        let by_zone = IndexModel::builder()
            .keys(doc! {"zone": 1})
            .options(IndexOptions::builder().name("zone".to_string()).build())
            .build();
        keys.create_index(by_zone).await?;
        Ok(())
    }
}
