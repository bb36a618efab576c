//! Writes of signed nodes ([`FullNode`]) into a zone version: whole nodes
//! into a version being built, and field-by-field changes
//! ([`NodeChange`]) into the version served, so that a concurrent
//! importer's records are never overwritten.
//!
//! ```text
//!  insert_full_nodes(nodes)      ─► one unordered insert (a version not served yet)
//!  insert_new_full_nodes(nodes)  ─► insert_batches: the ones another writer
//!                                   inserted meanwhile are returned, not written
//!  put_full_nodes(nodes)         ─► replace {_id} whole, upsert (run_updates)
//!  delete_nodes(names)           ─► delete {_id}, DELETES_PER_COMMAND a command
//!  apply_changes(changes) ─► one statement per change ($set/$unset of its own
//!        fields, $min sx) ─► run_updates (commands of ≤ MAX_UPDATES_PER_COMMAND)
//!        ─► then the NSEC3 nodes deleted, 1,000 per command
//! ```
//!
//! Telling servers about what was written is `publish_in_place.rs`.

use super::bulk::check_reply;
use crate::dnssec_store::{earliest_of, nsec3_node_id, signed_rrset_doc, FullNode, NodeChange};
use crate::schema::{binary, node_id, NODES};
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, Bson, Document};

/// Delete statements per `delete` command.
const DELETES_PER_COMMAND: usize = 1000;

/// What one [`NodeChange`] sends: an update statement, or a delete.
enum Statement {
    Update(Document),
    Delete(Document),
}

impl Store {
    /// Stores `nodes` whole in version `ver`, replacing what was there
    /// (a signer catching a new version up with the served one): upserts
    /// in commands of `writer::MAX_UPDATES_PER_COMMAND` statements.
    pub async fn put_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        nodes: &[FullNode],
    ) -> Result<(), StoreError> {
        let updates = nodes
            .iter()
            .map(|n| {
                let mut whole = n.to_doc(zone, ver);
                whole.remove("_id");
                doc! {"q": {"_id": n.id(zone, ver)}, "u": whole, "upsert": true}
            })
            .collect();
        self.run_updates(updates).await
    }

    /// Deletes the ordinary nodes `names` of version `ver`, those that
    /// exist, in commands of `DELETES_PER_COMMAND`.
    pub async fn delete_nodes(
        &self,
        zone: &Name,
        ver: i64,
        names: &[Name],
    ) -> Result<(), StoreError> {
        let deletes: Vec<Document> = names
            .iter()
            .map(|n| doc! {"q": {"_id": node_id(zone, ver, n)}, "limit": 1})
            .collect();
        self.run_deletes(&deletes).await
    }

    /// Runs delete statements, `DELETES_PER_COMMAND` to a command.
    async fn run_deletes(&self, deletes: &[Document]) -> Result<(), StoreError> {
        for chunk in deletes.chunks(DELETES_PER_COMMAND) {
            let reply = self
                .db
                .run_command(doc! {"delete": NODES, "deletes": chunk.to_vec(), "ordered": false})
                .await?;
            check_reply("delete", &reply)?;
        }
        Ok(())
    }

    /// Inserts whole nodes into a version that is not served yet.
    pub async fn insert_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        nodes: &[FullNode],
    ) -> Result<(), StoreError> {
        if nodes.is_empty() {
            return Ok(());
        }
        let docs: Vec<Document> = nodes.iter().map(|n| n.to_doc(zone, ver)).collect();
        let reply = self
            .db
            .run_command(doc! {"insert": NODES, "documents": docs, "ordered": false})
            .await?;
        check_reply("insert", &reply)
    }

    /// Inserts `nodes`, none of which was stored when read, whole (records,
    /// signatures, chain record, denial key, earliest expiration) into
    /// version `ver` of `zone`, in unordered commands of `INSERT_BATCH`.
    /// Returns the indexes (into `nodes`) of those another writer inserted
    /// meanwhile: they were not written.
    pub async fn insert_new_full_nodes(
        &self,
        zone: &Name,
        ver: i64,
        nodes: &[FullNode],
    ) -> Result<Vec<usize>, StoreError> {
        let docs = nodes.iter().map(|n| n.to_doc(zone, ver)).collect();
        self.insert_batches(docs).await
    }

    /// Applies changes to version `ver` of `zone`: unordered update
    /// commands of at most `writer::MAX_UPDATES_PER_COMMAND` statements,
    /// then deletes. Each change touches only its own fields.
    pub async fn apply_changes(
        &self,
        zone: &Name,
        ver: i64,
        changes: &[NodeChange],
    ) -> Result<(), StoreError> {
        let mut updates = Vec::new();
        let mut deletes = Vec::new();
        for c in changes {
            match statement(zone, ver, c) {
                Statement::Update(u) => updates.push(u),
                Statement::Delete(d) => deletes.push(d),
            }
        }
        // Small update commands, one at a time: FerretDB deadlocks on
        // ~100 statements in one (`writer::MAX_UPDATES_PER_COMMAND`); this
        // sent 1,000 and hung `resign` of any zone with that many changes.
        self.run_updates(updates).await?;
        self.run_deletes(&deletes).await
    }
}

/// The statement that writes `c` into version `ver` of `zone`.
fn statement(zone: &Name, ver: i64, c: &NodeChange) -> Statement {
    let update = |id: String, u: Document| Statement::Update(doc! {"q": {"_id": id}, "u": u});
    let upsert = |id: String, u: Document| {
        Statement::Update(doc! {"q": {"_id": id}, "u": u, "upsert": true})
    };
    match c {
        NodeChange::Sign {
            name,
            rtype,
            sigs,
            sd,
        } => {
            let key = rtype.mnemonic();
            let bin: Vec<Bson> = sigs.iter().map(|r| binary(r)).collect();
            let mut u =
                doc! {"$set": {format!("rrsets.{key}.sigs"): bin, format!("rrsets.{key}.sd"): sd}};
            min_expiry(&mut u, earliest_of(sigs));
            update(node_id(zone, ver, name), u)
        }
        NodeChange::Own { name, rtype, set } => {
            let key = format!("rrsets.{}", rtype.mnemonic());
            let u = match set {
                Some(s) => {
                    let mut u = doc! {"$set": {key: signed_rrset_doc(s)}};
                    min_expiry(&mut u, earliest_of(&s.sigs));
                    u
                }
                None => doc! {"$unset": {key: ""}},
            };
            update(node_id(zone, ver, name), u)
        }
        NodeChange::DenialKey { name, dk } => {
            let u = match dk {
                Some(dk) => doc! {"$set": {"dk": dk}},
                None => doc! {"$unset": {"dk": ""}},
            };
            update(node_id(zone, ver, name), u)
        }
        NodeChange::PutNsec3(node) => {
            let mut d = node.to_doc(zone, ver);
            d.remove("_id");
            upsert(node.id(zone, ver), d)
        }
        NodeChange::PutRRsets(node) => upsert(
            node_id(zone, ver, &node.name),
            put_rrsets_update(zone, ver, node),
        ),
        NodeChange::DeleteNsec3(b32) => {
            Statement::Delete(doc! {"q": {"_id": nsec3_node_id(zone, ver, b32)}, "limit": 1})
        }
        NodeChange::Refreshed { name, sets, sx } => {
            let mut set = Document::new();
            for (rtype, sigs, sd) in sets {
                let key = rtype.mnemonic();
                let sigs: Vec<Bson> = sigs.iter().map(|r| binary(r)).collect();
                set.insert(format!("rrsets.{key}.sigs"), sigs);
                set.insert(format!("rrsets.{key}.sd"), *sd);
            }
            let mut u = Document::new();
            match sx {
                Some(sx) => {
                    set.insert("sx", *sx);
                }
                None => {
                    u.insert("$unset", doc! {"sx": ""});
                }
            }
            if !set.is_empty() {
                u.insert("$set", set);
            }
            update(node_id(zone, ver, name), u)
        }
        NodeChange::Expiry { name, b32, sx } => {
            let id = match b32 {
                Some(b32) => nsec3_node_id(zone, ver, b32),
                None => node_id(zone, ver, name),
            };
            let u = match sx {
                Some(sx) => doc! {"$set": {"sx": sx}},
                None => doc! {"$unset": {"sx": ""}},
            };
            update(id, u)
        }
    }
}

/// The update of [`NodeChange::PutRRsets`]: each listed RRset set whole,
/// the denial key set, the node's identity only when it is created.
fn put_rrsets_update(zone: &Name, ver: i64, node: &FullNode) -> Document {
    let mut on_insert = doc! {
        "zone": zone.to_string(),
        "ver": ver,
        "name": node.name.to_string(),
        "ck": node.name.canonical_key(),
    };
    let mut set = Document::new();
    for r in &node.rrsets {
        set.insert(
            format!("rrsets.{}", r.rrset.rtype.mnemonic()),
            signed_rrset_doc(r),
        );
    }
    if node.rrsets.is_empty() {
        on_insert.insert("rrsets", Document::new());
    }
    if let Some(dk) = &node.dk {
        set.insert("dk", dk.clone());
    }
    let mut u = doc! {"$setOnInsert": on_insert};
    if !set.is_empty() {
        u.insert("$set", set);
    }
    min_expiry(&mut u, node.earliest_expiration());
    u
}

/// Adds `$min: {sx}` to an update: a node's `sx` is never later than its
/// earliest signature, whatever order writers write in (a refresh that
/// read the whole node sets it exactly with [`NodeChange::Expiry`]).
fn min_expiry(update: &mut Document, sx: Option<i64>) {
    if let Some(sx) = sx {
        update.insert("$min", doc! {"sx": sx});
    }
}
