//! The write half of a record edit: what [`super::edit`] decided, sent
//! to the database as set operations on the names' documents.
//!
//! ```text
//!  write_changed(changed names)
//!   ─► add_ancestors: missing empty non-terminals inserted (those the
//!      signer's chain shows absent are not read first)
//!   ─► insert_new: names not stored, inserted whole (one another writer
//!      inserted meanwhile is updated instead)
//!   ─► write_edits: $pullAll, then $set / $unset / $addToSet, then sets
//!      a removal left empty unset
//!   ─► remove_if_childless: names left empty, and their empty ancestors
//! ```

use super::edit::Pending;
use crate::schema::{self, node_id};
use crate::store::{Store, StoreError};
use crate::{Name, RType};
use dns::edit::{NodeEdit, RRsetWrite};
use mongodb::bson::{doc, Bson, Document};
use std::collections::BTreeSet;

impl Store {
    /// Writes the changed names: the ancestors of new names first, then
    /// the names, then empty names with no children removed (their empty
    /// ancestors too). Returns every name written.
    pub(super) async fn write_changed(
        &self,
        zone: &Name,
        ver: i64,
        changed: &[&Pending],
    ) -> Result<Vec<Name>, StoreError> {
        let new: Vec<&Pending> = changed
            .iter()
            .copied()
            .filter(|p| !p.existed && !p.edit.is_empty())
            .collect();
        let mut written = self
            .add_ancestors(zone, ver, &new, &BTreeSet::new())
            .await?;
        let raced = self.insert_new(zone, ver, &new).await?;
        let rest: Vec<&Pending> = changed
            .iter()
            .copied()
            .filter(|p| p.existed || p.edit.is_empty() || raced.contains(p.edit.name()))
            .collect();
        self.write_edits(zone, ver, &rest).await?;
        written.extend(changed.iter().map(|p| p.edit.name().clone()));
        for p in changed.iter().filter(|p| p.existed && p.edit.is_empty()) {
            written.extend(self.remove_if_childless(zone, ver, p.edit.name()).await?);
        }
        Ok(written)
    }

    /// Inserts the names that did not exist whole, in unordered bulk
    /// inserts; returns those another writer inserted meanwhile (their
    /// edits are then applied as updates, with the set operators).
    async fn insert_new(
        &self,
        zone: &Name,
        ver: i64,
        new: &[&Pending],
    ) -> Result<Vec<Name>, StoreError> {
        let docs = new
            .iter()
            .map(|p| schema::node_doc(zone, ver, p.edit.name(), p.edit.after()))
            .collect();
        let dups = self.insert_batches(docs).await?;
        Ok(dups
            .into_iter()
            .map(|i| new[i].edit.name().clone())
            .collect())
    }

    /// Inserts the empty non-terminals missing between the new names and
    /// the apex (read first, but not those `absent`; inserted in unordered
    /// bulk inserts); returns those it inserted (one another writer
    /// inserted meanwhile exists).
    pub(super) async fn add_ancestors(
        &self,
        zone: &Name,
        ver: i64,
        new: &[&Pending],
        absent: &BTreeSet<Name>,
    ) -> Result<Vec<Name>, StoreError> {
        let names: std::collections::BTreeSet<&Name> = new.iter().map(|p| p.edit.name()).collect();
        let mut ancestors: Vec<Name> = names
            .iter()
            .flat_map(|n| n.ancestors().skip(1).take_while(|a| a != zone))
            .filter(|a| !names.contains(a))
            .collect();
        ancestors.sort();
        ancestors.dedup();
        let (mut missing, unknown): (Vec<Name>, Vec<Name>) =
            ancestors.into_iter().partition(|a| absent.contains(a));
        let stored = self.read_full_nodes(zone, ver, &unknown).await?;
        missing.extend(
            unknown
                .into_iter()
                .zip(stored)
                .filter_map(|(a, s)| s.is_none().then_some(a)),
        );
        missing.sort();
        let docs = missing
            .iter()
            .map(|a| schema::node_doc(zone, ver, a, &[]))
            .collect();
        let dups = self.insert_batches(docs).await?;
        Ok(missing
            .into_iter()
            .enumerate()
            .filter_map(|(i, a)| (!dups.contains(&i)).then_some(a))
            .collect())
    }

    /// The three rounds of node updates: removals from RRsets, then the
    /// rest, then RRsets a removal left empty.
    async fn write_edits(
        &self,
        zone: &Name,
        ver: i64,
        changed: &[&Pending],
    ) -> Result<(), StoreError> {
        let (mut pulls, mut sets, mut empties) = (Vec::new(), Vec::new(), Vec::new());
        for p in changed {
            let id = node_id(zone, ver, p.edit.name());
            let u = NodeUpdates::of(&p.edit);
            if !u.pull.is_empty() {
                pulls.push(doc! {"q": {"_id": &id}, "u": {"$pullAll": u.pull}});
            }
            let mut update = Document::new();
            for (op, fields) in [("$set", u.set), ("$unset", u.unset), ("$addToSet", u.add)] {
                if !fields.is_empty() {
                    update.insert(op, fields);
                }
            }
            if !update.is_empty() {
                update.insert("$setOnInsert", base_fields(zone, ver, p.edit.name(), false));
                sets.push(doc! {"q": {"_id": &id}, "u": update, "upsert": true});
            }
            for t in u.emptied {
                let field = format!("rrsets.{}", t.mnemonic());
                empties.push(doc! {
                    "q": {"_id": &id, format!("{field}.rd"): {"$size": 0}},
                    "u": {"$unset": {field: ""}},
                });
            }
        }
        for round in [pulls, sets, empties] {
            if !round.is_empty() {
                self.run_updates(round).await?;
            }
        }
        Ok(())
    }

    /// Deletes `name`, which holds nothing of its own now (in a secured
    /// zone its NSEC may still be there: the signer relinks around it),
    /// unless a name exists below it; then each ancestor left an empty
    /// non-terminal with nothing below. Returns the names deleted.
    async fn remove_if_childless(
        &self,
        zone: &Name,
        ver: i64,
        name: &Name,
    ) -> Result<Vec<Name>, StoreError> {
        let mut removed = Vec::new();
        for n in name.ancestors().take_while(|a| a != zone) {
            if self.has_names_below(zone, ver, &n).await? {
                break;
            }
            let mut only = doc! {"_id": node_id(zone, ver, &n)};
            if n != *name {
                only.insert("rrsets", Document::new());
            }
            if self.nodes.delete_one(only).await?.deleted_count == 0 {
                break;
            }
            removed.push(n);
        }
        Ok(removed)
    }

    /// True when version `ver` holds a name below `name` (its canonical key
    /// is a prefix of theirs: one index range read on MongoDB).
    async fn has_names_below(
        &self,
        zone: &Name,
        ver: i64,
        name: &Name,
    ) -> Result<bool, StoreError> {
        let key = name.canonical_key();
        // Keys are lower-case hex: "g" sorts after every key that extends it.
        let below = self
            .nodes
            .find_one(doc! {"zone": zone.to_string(), "ver": ver, "ck": {"$gt": &key, "$lt": format!("{key}g")}})
            .projection(doc! {"_id": 1})
            .await?;
        Ok(below.is_some())
    }
}

/// The fields a node document has besides its RRsets.
fn base_fields(zone: &Name, ver: i64, name: &Name, empty: bool) -> Document {
    let mut d = doc! {
        "zone": zone.to_string(),
        "ver": ver,
        "name": name.to_string(),
        "ck": name.canonical_key(),
    };
    if empty {
        d.insert("rrsets", Document::new());
    }
    d
}

/// One name's edits as update operators.
#[derive(Default)]
struct NodeUpdates {
    pull: Document,
    set: Document,
    unset: Document,
    add: Document,
    /// Types whose last records a `$pull` removes.
    emptied: Vec<RType>,
}

impl NodeUpdates {
    fn of(edit: &NodeEdit) -> NodeUpdates {
        let mut u = NodeUpdates::default();
        for (t, w) in edit.writes() {
            let t = &t;
            let key = format!("rrsets.{}", t.mnemonic());
            match w {
                RRsetWrite::Set(r) => {
                    u.set.insert(format!("{key}.ttl"), i64::from(r.ttl));
                    u.set.insert(format!("{key}.rd"), binaries(&r.rdata));
                }
                RRsetWrite::Remove => {
                    u.unset.insert(key, "");
                }
                RRsetWrite::Delta { add, remove, ttl } => {
                    if !remove.is_empty() {
                        u.pull.insert(format!("{key}.rd"), binaries(remove));
                    }
                    if !add.is_empty() {
                        u.add
                            .insert(format!("{key}.rd"), doc! {"$each": binaries(add)});
                    }
                    if let Some(ttl) = ttl {
                        u.set.insert(format!("{key}.ttl"), i64::from(*ttl));
                    }
                    if !edit.after().iter().any(|r| r.rtype == *t) {
                        u.emptied.push(*t);
                    }
                }
            }
        }
        u
    }
}

fn binaries(rdata: &[Box<[u8]>]) -> Bson {
    Bson::Array(rdata.iter().map(|r| schema::binary(r)).collect())
}
