//! Bulk writes of node documents, in the shapes FerretDB and MongoDB both
//! take well: unordered inserts, and updates in small serialized commands.
//!
//! ```text
//!  insert_nodes(docs) ─► one unordered insert ─► indexes of duplicates
//!  insert_batches(docs) ─► insert_nodes in commands of INSERT_BATCH
//!     (signed nodes: insert_new_full_nodes, signed_nodes.rs)
//!  duplicates ─► merge_update (upsert: $set ttl, $addToSet rd) ─► run_updates
//!  run_updates ─► FerretDB: commands of ≤ MAX_UPDATES_PER_COMMAND, one
//!     at a time; MongoDB: commands of MONGODB_UPDATES_PER_COMMAND, ungated
//! ```

use super::NodeWrite;
use crate::schema::{self, node_id};
use crate::store::{Store, StoreError};
use crate::Name;
use mongodb::bson::{doc, Bson, Document};

pub(crate) const DUPLICATE_KEY: i32 = 11000;

/// Update statements sent in one `update` command, and only one such
/// command at a time per process ([`UPDATE_GATE`]).
///
/// FerretDB 1.24 (SQLite backend) deadlocks on big `update` commands: its
/// handler (`internal/handler/msg_update.go`) opens a query iterator per
/// statement and closes them all only when the command ends (`defer` in the
/// loop), each holding one of the database's 100 pooled SQLite connections,
/// while each statement's write needs one more. An `update` of ~100
/// statements (or several concurrent ones adding up to that) waits forever,
/// holding FerretDB's metadata lock, after which *every* command, even
/// `ping`, hangs until FerretDB is restarted. Measured: 60 statements answer
/// in 60 ms, 100 never. Each statement costs FerretDB ~1 ms anyway, so
/// small serialized commands lose nothing there.
pub const MAX_UPDATES_PER_COMMAND: usize = 16;

/// Update statements in one command on MongoDB, which takes up to
/// `maxWriteBatchSize` (100,000) and has no such deadlock: a message's
/// 2,000 predecessor updates go in two round trips, not 125.
pub const MONGODB_UPDATES_PER_COMMAND: usize = 1000;

/// Statements per `update` command, and whether commands wait for
/// [`UPDATE_GATE`]: the FerretDB guard, or MongoDB's own batches.
fn update_commands(ferretdb: bool) -> (usize, bool) {
    match ferretdb {
        true => (MAX_UPDATES_PER_COMMAND, true),
        false => (MONGODB_UPDATES_PER_COMMAND, false),
    }
}

/// Node documents per insert command.
const INSERT_BATCH: usize = 1000;

/// One `update` command in flight per process (see [`MAX_UPDATES_PER_COMMAND`]).
pub(crate) static UPDATE_GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

pub(crate) fn merge_update(zone: &Name, ver: i64, node: &NodeWrite) -> Document {
    let id = node_id(zone, ver, &node.name);
    let mut on_insert = doc! {
        "zone": zone.to_string(),
        "ver": ver,
        "name": node.name.to_string(),
        "ck": node.name.canonical_key(),
    };
    let mut update = Document::new();
    if node.rrsets.is_empty() {
        on_insert.insert("rrsets", Document::new());
    } else {
        let mut set = Document::new();
        let mut add = Document::new();
        for rrset in &node.rrsets {
            let key = rrset.rtype.mnemonic();
            set.insert(format!("rrsets.{key}.ttl"), i64::from(rrset.ttl));
            let each: Vec<Bson> = rrset.rdata.iter().map(|r| schema::binary(r)).collect();
            add.insert(format!("rrsets.{key}.rd"), doc! {"$each": each});
        }
        update.insert("$set", set);
        update.insert("$addToSet", add);
    }
    update.insert("$setOnInsert", on_insert);
    doc! {"q": {"_id": id}, "u": update, "upsert": true}
}

/// Inserts node documents in one unordered command; returns the indexes of
/// those that already existed (to be merged), and fails on any other error.
pub(crate) async fn insert_nodes(
    db: &mongodb::Database,
    docs: Vec<Document>,
) -> Result<Vec<usize>, StoreError> {
    let reply = db
        .run_command(doc! {"insert": schema::NODES, "documents": docs, "ordered": false})
        .await?;
    let (dups, other): (Vec<_>, Vec<_>) = command_errors(&reply)
        .into_iter()
        .partition(|(_, code, _)| *code == DUPLICATE_KEY);
    if !other.is_empty() {
        return Err(write_failure("insert", &other));
    }
    Ok(dups.into_iter().map(|(i, _, _)| i).collect())
}

pub(crate) fn command_errors(reply: &Document) -> Vec<(usize, i32, String)> {
    let mut out = Vec::new();
    if let Ok(errors) = reply.get_array("writeErrors") {
        for e in errors.iter().filter_map(Bson::as_document) {
            let index = e
                .get("index")
                .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
                .unwrap_or(-1);
            let code = e.get("code").and_then(|v| v.as_i32()).unwrap_or(0);
            let msg = e.get_str("errmsg").unwrap_or("").to_string();
            out.push((index as usize, code, msg));
        }
    }
    out
}

/// Fails with [`write_failure`] when a command's `reply` lists write errors.
pub(crate) fn check_reply(what: &str, reply: &Document) -> Result<(), StoreError> {
    let errors = command_errors(reply);
    match errors.is_empty() {
        true => Ok(()),
        false => Err(write_failure(what, &errors)),
    }
}

pub(crate) fn write_failure(what: &str, errors: &[(usize, i32, String)]) -> StoreError {
    let (index, code, msg) = &errors[0];
    StoreError::Database(mongodb::error::Error::custom(format!(
        "{what}: {} write error(s), first at #{index}: code {code}: {msg}",
        errors.len()
    )))
}

impl Store {
    /// Runs node updates in commands of at most [`MAX_UPDATES_PER_COMMAND`]
    /// statements on FerretDB, [`MONGODB_UPDATES_PER_COMMAND`] on MongoDB.
    pub(crate) async fn run_updates(&self, updates: Vec<Document>) -> Result<(), StoreError> {
        self.run_updates_on(schema::NODES, updates).await
    }

    /// [`Store::run_updates`] on any collection.
    pub(crate) async fn run_updates_on(
        &self,
        coll: &str,
        updates: Vec<Document>,
    ) -> Result<(), StoreError> {
        let (per_command, gated) = update_commands(self.ferretdb);
        for part in updates.chunks(per_command) {
            let _gate = match gated {
                true => Some(UPDATE_GATE.acquire().await.expect("never closed")),
                false => None,
            };
            let reply = self
                .db
                .run_command(doc! {"update": coll, "updates": part.to_vec(), "ordered": false})
                .await?;
            check_reply("update", &reply)?;
        }
        Ok(())
    }
}

impl Store {
    /// Inserts `docs` in unordered commands of [`INSERT_BATCH`]; returns
    /// the indexes (into `docs`) of those that existed already.
    pub(crate) async fn insert_batches(
        &self,
        mut docs: Vec<Document>,
    ) -> Result<Vec<usize>, StoreError> {
        let mut dups = Vec::new();
        let mut at = 0;
        while !docs.is_empty() {
            let rest = docs.split_off(docs.len().min(INSERT_BATCH));
            let n = docs.len();
            dups.extend(
                insert_nodes(&self.db, docs)
                    .await?
                    .into_iter()
                    .map(|i| at + i),
            );
            at += n;
            docs = rest;
        }
        Ok(dups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ferretdb_gets_small_gated_commands_and_mongodb_big_ones() {
        // FerretDB hangs for good past ~60 statements a command, or as many
        // in flight at once: keep well under, one command at a time.
        let (per, gated) = update_commands(true);
        assert!(per <= 32 && gated);
        // MongoDB: a 2,000-name message's predecessor updates in two
        // commands, sent without waiting on other writers' commands.
        let (per, gated) = update_commands(false);
        assert_eq!(2000usize.div_ceil(per), 2);
        assert!(!gated);
    }
}
