//! A catalog zone (RFC 9432, schema version 2) kept in step with the zones
//! the database serves, so that secondaries configured as its consumers
//! create and delete member zones by themselves.
//!
//! ```text
//!  sync(store, catalog)
//!    ─► the catalog served? no ─► create_zone: SOA, NS invalid.,
//!                                  version TXT "2"
//!    ─► wanted: every served zone (list_zones, paged), the catalog left out
//!    ─► listed: the catalog's names below zones.<catalog>: PTR ─► member
//!    ─► edits: a zone not listed ─► add <member_label>.zones PTR zone
//!              a member no longer served ─► delete its name
//!    ─► signer::edit::apply, MAX_EDITS a change-set (one serial each;
//!       signed in it when the catalog is secured)
//! ```
//!
//! `sync` reads every zone: on start, a full reconciliation. After it,
//! [`sync_changes`] (`catalog/changes.rs`) keeps the catalog current from
//! the zone documents whose generation moved, reading only those.
//!
//! Syncing is idempotent: two writers syncing at once do the same edits,
//! and the second finds nothing left to do. A member's label is the
//! SHA-1 of its wire name in hex, so the same zone gets the same label from
//! every producer; a member listed under another label (written by hand)
//! is kept as it is.

use crate::create::{create_zone, today_serial, CreateError, NewZone};
use crate::SignError;
use backend_mongo::{NodeWrite, Store, StoreError};
use dns::edit::{ChangeSet, RecordEdit};
use dns::encoding::to_hex;
use dns::{Name, RRset, RType};

mod changes;
pub use changes::sync_changes;
use std::collections::{BTreeMap, BTreeSet};

/// Edits in one change-set: a sync of many new zones publishes in steps.
pub const MAX_EDITS: usize = 1000;
/// Zones read from the database at a time.
const PAGE: usize = 10_000;
/// TTL of the catalog's records (consumers do not use it, RFC 9432 §3).
const TTL: u32 = 0;

/// What one [`sync`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CatalogSync {
    /// The catalog was created by this sync.
    pub created: bool,
    /// Members added.
    pub added: usize,
    /// Members removed.
    pub removed: usize,
    /// The catalog's serial after the sync, when it changed.
    pub serial: Option<u32>,
    /// Documents read: zone documents and catalog nodes (a full sync
    /// reads every zone and the whole catalog; [`sync_changes`] only the
    /// zones that moved and their catalog entries).
    pub reads: usize,
}

/// The label a member zone is listed under: the hex SHA-1 of its wire name.
pub fn member_label(member: &Name) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, member.as_wire());
    to_hex(digest.as_ref())
}

/// The owner of `member`'s PTR in `catalog`.
pub fn member_owner(catalog: &Name, member: &Name) -> Result<Name, SignError> {
    let text = format!("{}.zones.{catalog}", member_label(member));
    text.parse()
        .map_err(|_| SignError::Usage(format!("catalog {catalog}: the name {text} is too long")))
}

/// Brings `catalog` in step with the zones served (see the module
/// documentation); creates it when it is missing.
pub async fn sync(store: &Store, catalog: &Name) -> Result<CatalogSync, SignError> {
    let mut done = CatalogSync {
        created: ensure_catalog(store, catalog).await?,
        ..CatalogSync::default()
    };
    let wanted = served_zones(store, catalog, &mut done.reads).await?;
    let listed = listed_members(store, catalog, &mut done.reads).await?;
    let mut edits = Vec::new();
    for zone in wanted.iter().filter(|z| !listed.contains_key(*z)) {
        edits.push(add_member(catalog, zone)?);
        done.added += 1;
    }
    for (member, owner) in listed.iter().filter(|(m, _)| !wanted.contains(*m)) {
        tracing::debug!(%catalog, %member, "catalog: member no longer served");
        edits.push(RecordEdit::DeleteName {
            name: owner.clone(),
        });
        done.removed += 1;
    }
    publish(store, catalog, &edits, &mut done).await?;
    Ok(done)
}

/// The edit that lists `zone` in `catalog`: its PTR under its label.
fn add_member(catalog: &Name, zone: &Name) -> Result<RecordEdit, SignError> {
    let ptr = vec![zone.as_wire().into()];
    Ok(RecordEdit::add(
        member_owner(catalog, zone)?,
        RType::PTR,
        TTL,
        ptr,
    ))
}

/// Applies `edits` to `catalog`, [`MAX_EDITS`] a change-set, each
/// published with its serial as one step (what readers and IXFR see).
async fn publish(
    store: &Store,
    catalog: &Name,
    edits: &[RecordEdit],
    done: &mut CatalogSync,
) -> Result<(), SignError> {
    for chunk in edits.chunks(MAX_EDITS) {
        let change = ChangeSet::new(catalog.clone(), chunk.to_vec());
        let summary = crate::edit::apply(store, &change).await?;
        done.serial = done.serial.max(summary.gen.map(|_| summary.serial));
    }
    Ok(())
}

/// Creates the catalog when it is not served; true when it was created.
async fn ensure_catalog(store: &Store, catalog: &Name) -> Result<bool, SignError> {
    if store.find_zone(catalog).await?.is_some() {
        return Ok(false);
    }
    let invalid: Name = "invalid.".parse().expect("a valid name");
    let new = NewZone {
        apex: catalog.clone(),
        nameservers: vec![invalid.clone()],
        rname: invalid,
        ttl: TTL,
        serial: today_serial(),
    };
    let version = NodeWrite {
        name: format!("version.{catalog}")
            .parse()
            .map_err(|_| SignError::Usage(format!("catalog {catalog}: name too long")))?,
        rrsets: vec![RRset {
            rtype: RType::TXT,
            ttl: TTL,
            rdata: vec![b"\x012".to_vec().into_boxed_slice()],
        }],
    };
    let apex = new.apex_node().map_err(create_fault)?;
    match create_zone(store, catalog, &[apex, version]).await {
        Ok(_) => Ok(true),
        // Another writer created it meanwhile.
        Err(CreateError::ZoneExists(_)) => Ok(false),
        Err(e) => Err(create_fault(e)),
    }
}

fn create_fault(e: CreateError) -> SignError {
    match e {
        CreateError::Store(e) => SignError::Store(e),
        e => SignError::Usage(e.to_string()),
    }
}

/// Every zone served but the catalog itself.
async fn served_zones(
    store: &Store,
    catalog: &Name,
    reads: &mut usize,
) -> Result<BTreeSet<Name>, StoreError> {
    let mut zones = BTreeSet::new();
    let mut after: Option<Name> = None;
    loop {
        let page = store.list_zones(after.as_ref(), PAGE).await?;
        *reads += page.len();
        let full = page.len() == PAGE;
        after = page.last().map(|z| z.apex.clone());
        zones.extend(page.into_iter().map(|z| z.apex).filter(|a| a != catalog));
        if !full {
            return Ok(zones);
        }
    }
}

/// The members the catalog lists: member zone ─► the owner of its PTR.
async fn listed_members(
    store: &Store,
    catalog: &Name,
    reads: &mut usize,
) -> Result<BTreeMap<Name, Name>, StoreError> {
    let Some(info) = store.find_zone(catalog).await? else {
        return Ok(BTreeMap::new());
    };
    let zones: Name = format!("zones.{catalog}")
        .parse()
        .map_err(|_| StoreError::Conflict(format!("catalog {catalog}: name too long")))?;
    let mut members = BTreeMap::new();
    let nodes = store.zone_nodes(&info).await?;
    *reads += nodes.len();
    for node in nodes {
        if node.name.parent().as_ref() != Some(&zones) {
            continue;
        }
        let Some(ptr) = node.rrset(RType::PTR) else {
            continue;
        };
        for rdata in &ptr.rdata {
            if let Ok(member) = Name::from_wire(rdata) {
                members.insert(member, node.name.clone());
            }
        }
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_labels_are_the_sha1_of_the_wire_name() {
        let zone: Name = "Example.COM.".parse().unwrap();
        // SHA-1 of \x07example\x03com\x00, case folded first.
        let label = member_label(&zone);
        assert_eq!(label, "c5e4b4da1e5a620ddaa3635e55c3732a5b49c7f4");
        assert_eq!(label, member_label(&"example.com.".parse().unwrap()));
        assert_ne!(label, member_label(&"example.net.".parse().unwrap()));
        let owner = member_owner(&"catalog.invalid.".parse().unwrap(), &zone).unwrap();
        assert_eq!(owner.to_string(), format!("{label}.zones.catalog.invalid."));
    }
}
