//! Keeping a catalog current from the zones that changed, not from all.
//!
//! ```text
//!  sync_changes(store, catalog, since)
//!    ─► the catalog not served ─► sync (the full one: creates it)
//!    ─► zones_moved_after(since): (apex, served) of each zone document
//!       whose generation is above `since`, the catalog left out
//!    ─► per zone, the catalog node at its member owner (an `_id` read,
//!       16 at a time): served, not listed ─► add its PTR
//!                      listed, not served ─► delete the name
//!    ─► publish: one serial a change-set, as `sync`
//! ```
//!
//! What a call reads grows with the zones changed since `since`, never
//! with the zones served. The caller picks `since`: a generation up to
//! which every zone document was visible before its last call began (the
//! server's keeper takes it from its change poll). A member listed by
//! hand under another label is left to the full sync.

use super::{add_member, member_owner, publish, sync, CatalogSync};
use crate::SignError;
use backend_mongo::Store;
use dns::edit::RecordEdit;
use dns::{Name, RType, ZoneInfo};
use futures::{StreamExt, TryStreamExt};

/// Catalog nodes read at once.
const READS_AT_ONCE: usize = 16;

/// Brings `catalog` in step with the zones whose generation is above
/// `since` (see the module documentation); a catalog not served yet is
/// created and filled by the full [`sync`].
pub async fn sync_changes(
    store: &Store,
    catalog: &Name,
    since: i64,
) -> Result<CatalogSync, SignError> {
    let Some(info) = store.find_zone(catalog).await? else {
        return sync(store, catalog).await;
    };
    let moved = store.zones_moved_after(since).await?;
    let mut done = CatalogSync {
        reads: 1 + moved.len(),
        ..CatalogSync::default()
    };
    let moved: Vec<(Name, bool)> = moved.into_iter().filter(|(z, _)| z != catalog).collect();
    // Owned names: a stream of borrowed ones is not `Send` for every
    // lifetime (the keeper runs as a task).
    let zones: Vec<Name> = moved.iter().map(|(z, _)| z.clone()).collect();
    let info = &info;
    let listed: Vec<bool> = futures::stream::iter(zones)
        .map(|zone| async move { is_listed(store, info, catalog, &zone).await })
        .buffered(READS_AT_ONCE)
        .try_collect()
        .await?;
    done.reads += moved.len();
    let mut edits = Vec::new();
    for ((zone, served), listed) in moved.iter().zip(listed) {
        match (served, listed) {
            (true, false) => {
                edits.push(add_member(catalog, zone)?);
                done.added += 1;
            }
            (false, true) => {
                tracing::debug!(%catalog, member = %zone, "catalog: member no longer served");
                let name = member_owner(catalog, zone)?;
                edits.push(RecordEdit::DeleteName { name });
                done.removed += 1;
            }
            _ => {}
        }
    }
    publish(store, catalog, &edits, &mut done).await?;
    Ok(done)
}

/// True when `catalog` (served as `info`) lists `zone` under its label.
async fn is_listed(
    store: &Store,
    info: &ZoneInfo,
    catalog: &Name,
    zone: &Name,
) -> Result<bool, SignError> {
    let owner = member_owner(catalog, zone)?;
    let node = store.get_node(info, &owner).await?;
    Ok(node
        .as_ref()
        .and_then(|n| n.rrset(RType::PTR))
        .is_some_and(|ptr| {
            ptr.rdata
                .iter()
                .any(|r| Name::from_wire(r).is_ok_and(|m| m == *zone))
        }))
}
