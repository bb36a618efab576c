//! Record edits that keep a secured zone signed: the change-set is signed
//! before it is published, under the zone's signing lease.
//!
//! ```text
//!  edit_zone(zone, edits) = apply(ChangeSet: zone, prerequisites, edits,
//!                                 when_ignored)
//!    not secured ─► Store::edit_zone (secured meanwhile, by a secure-zone
//!       switching while it waited for the zone lock: signed as below)
//!    secured ─► lease::take_soon (waits out a pass of the signing service)
//!       ─ held by another signer ─► Store::edit_zone
//!       │        unsigned (its change record hands the names to the holder),
//!       │        then handoff::sign_unsigned_writes once the lease is free;
//!       │        nothing written (a killed run's re-run?): the signed path
//!       │        below once the lease is free, to repair its names' chain
//!       ─► MergeSigner for the served version V (keys, chain read once)
//!       ─► Store::begin_signed_edit(V, names the chain shows absent: not
//!          read) [zone lock] records of stored names written, emptied
//!          names gone; names not stored left to the signer
//!       ─► write_new(those): each inserted once, whole and signed, linked
//!       ─► resign_names(the rest): signatures, chain relinked around them
//!       ─► sign_soa(served serial) ─► note_signed ─► publish [unlock]
//!       ─► lease released
//! ```
//!
//! One generation, one change record (marked signed), one serial: a server
//! that caches sees the zone before or after, signed both times. Readers
//! that go to the database between the write and the publish (uncached
//! names, milliseconds) can see an edited RRset before its signature.

use crate::merge::MergeSigner;
use crate::{handoff, kept_signer, lease, SignError};
use backend_mongo::{EditSummary, Store, StoreError, ZoneEdit};
use dns::edit::{ChangeSet, RecordEdit};
use dns::Name;
use std::collections::BTreeSet;

/// How many times a version switched under the edit is tolerated.
const ATTEMPTS: usize = 3;

/// Applies `edits` to `zone` as one change-set, signed in it when the zone
/// is secured (see the module documentation).
pub async fn edit_zone(
    store: &Store,
    zone: &Name,
    edits: &[RecordEdit],
) -> Result<EditSummary, SignError> {
    apply(store, &ChangeSet::new(zone.clone(), edits.to_vec())).await
}

/// Applies `change` as [`edit_zone`] does, when its prerequisites hold
/// (RFC 2136 §3.2), checked under the zone lock against the zone as
/// served: unmet, nothing is written and the summary says which
/// ([`EditSummary::unmet`]).
pub async fn apply(store: &Store, change: &ChangeSet) -> Result<EditSummary, SignError> {
    let zone = &change.zone;
    if !handoff::zone_secured(store, zone).await? {
        return unsigned_then_secured(store, change).await;
    }
    let Some(lease) = lease::take_soon(store, zone, "edit").await? else {
        return unsigned_edit(store, change).await;
    };
    let r = signed_edit(store, change).await;
    lease.release_with(r).await
}

/// A zone not secured when the edit began: written unsigned. If
/// `secure-zone` switched while the edit waited for the zone lock, the
/// edit went into the secured version: then what it wrote is signed like
/// any unsigned write into a secured zone ([`handoff::sign_unsigned_writes`]).
async fn unsigned_then_secured(
    store: &Store,
    change: &ChangeSet,
) -> Result<EditSummary, SignError> {
    let zone = &change.zone;
    let since = store.find_zone(zone).await?.map_or(0, |z| z.gen);
    let mut summary = unsigned(store, change).await?;
    if summary.gen.is_some() && handoff::zone_secured(store, zone).await? {
        sign_written(store, zone, since, &mut summary).await;
    }
    Ok(summary)
}

/// Signs what an edit wrote unsigned into a secured zone (the changes
/// since generation `since`), its serial into `summary`. A fault is
/// logged: the change-set is in, and its change record still hands the
/// names to the next signer.
async fn sign_written(store: &Store, zone: &Name, since: i64, summary: &mut EditSummary) {
    match handoff::sign_unsigned_writes(store, zone, since, None, "edit").await {
        Ok(Some(r)) => summary.serial = r.serial,
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(%zone, error = %e, "the edit is in; signing it is left to the next signer")
        }
    }
}

/// The change-set written and published, nothing signed.
async fn unsigned(store: &Store, change: &ChangeSet) -> Result<EditSummary, StoreError> {
    store.begin_edit(change, None).await?.publish().await
}

/// Another signer holds the lease: the change-set is written unsigned
/// (its change record hands the names to the holder), then signed here
/// once the lease is free, unless the holder keeps it (`resign --follow`,
/// which signs them itself).
async fn unsigned_edit(store: &Store, change: &ChangeSet) -> Result<EditSummary, SignError> {
    let zone = &change.zone;
    tracing::info!(%zone, "another signer holds the zone's lease: the edit is written unsigned");
    let since = store.find_zone(zone).await?.map_or(0, |z| z.gen);
    let mut summary = unsigned(store, change).await?;
    if summary.gen.is_none() && summary.unmet.is_none() {
        // Nothing left to write: maybe the re-run of an edit killed
        // mid-way, whose names may be half-signed (a new name not yet in
        // its predecessor's NSEC, a deleted one still pointed to). Their
        // chain is repaired under the lease once it is free.
        return signed_once_free(store, change, summary).await;
    }
    if summary.gen.is_some() {
        sign_written(store, zone, since, &mut summary).await;
    }
    Ok(summary)
}

/// A change-set that wrote nothing, in a secured zone whose lease another
/// signer held: run again signed once the lease is free (it writes nothing
/// and signs only what its names lack), unless the holder keeps the lease
/// (`resign --follow`, which signs the names the edit's change records
/// list). `summary` is what the unsigned run did.
async fn signed_once_free(
    store: &Store,
    change: &ChangeSet,
    summary: EditSummary,
) -> Result<EditSummary, SignError> {
    let zone = &change.zone;
    if handoff::follower_holds(store, zone).await? {
        return Ok(summary);
    }
    match lease::take_behind_signers(store, zone, "edit", handoff::unsigned_handoff_wait()).await {
        Ok(lease) => {
            let r = signed_edit(store, change).await;
            lease.release_with(r).await
        }
        Err(SignError::Busy(holder)) => {
            tracing::info!(%zone, %holder, "the edit's names are left to the signer holding the lease");
            Ok(summary)
        }
        Err(e) => Err(e),
    }
}

/// The secured path, the lease held: retried when a replace switched the
/// zone between reading the chain and taking the zone lock. The signer of
/// the last edit is taken up again when it can be ([`kept_signer`]).
async fn signed_edit(store: &Store, change: &ChangeSet) -> Result<EditSummary, SignError> {
    let zone = &change.zone;
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let served = store
            .find_zone(zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
        let t = std::time::Instant::now();
        let made = kept_signer::made_with(store, zone).await?;
        let signer = match kept_signer::take(store, zone, &served).await? {
            Some(signer) => signer,
            None => match MergeSigner::new(store, zone, served.ver).await? {
                Some(signer) => signer,
                // Unsecured meanwhile.
                None => return Ok(unsigned(store, change).await?),
            },
        };
        let ready = t.elapsed();
        let absent = signer.absent_among(change.edits.iter().map(|e| e.name()));
        let edit = match store.begin_signed_edit(change, served.ver, &absent).await {
            Err(StoreError::Conflict(why)) => {
                last = Some(why);
                continue;
            }
            r => r?,
        };
        let (summary, signer) = sign_and_publish(store, change, edit, signer).await?;
        tracing::debug!(%zone, edits = change.edits.len(), signer_ready = ?ready,
            published = ?t.elapsed(), "signed edit");
        if let (Some(signer), Some(gen)) = (signer, summary.gen) {
            let ours = summary.intent_gen.into_iter().chain([gen]).collect();
            kept_signer::keep(store, zone, signer, made, served.gen, ours);
        }
        return Ok(summary);
    }
    Err(SignError::Store(StoreError::Conflict(
        last.unwrap_or_default(),
    )))
}

/// Signs what `edit` wrote and publishes it; returns the signer too when
/// it may be kept for the next edit.
async fn sign_and_publish(
    store: &Store,
    change: &ChangeSet,
    mut edit: ZoneEdit,
    mut signer: MergeSigner,
) -> Result<(EditSummary, Option<MergeSigner>), SignError> {
    let zone = &change.zone;
    // What was written, and every name the change-set is about: a killed
    // run may have written them unsigned (a re-run then finds nothing to
    // change, and signing them is a no-op when all is well).
    signer.keep_images(edit.take_images());
    let new_nodes = edit.take_new_nodes();
    let new: BTreeSet<&Name> = new_nodes.iter().map(|w| &w.name).collect();
    let mut names: Vec<Name> = edit.names().to_vec();
    names.extend(
        change
            .edits
            .iter()
            .flat_map(|e| e.name().ancestors().take_while(|a| a != zone)),
    );
    names.retain(|n| !new.contains(n));
    let t = std::time::Instant::now();
    signer.write_new(store, &new_nodes).await?;
    let t_new = t.elapsed();
    signer.resign_names(store, &names).await?;
    tracing::debug!(%zone, new = new_nodes.len(), new_written = ?t_new,
        others = names.len(), others_signed = ?t.elapsed(), "edit signed");
    if signer.needs_full_resign() {
        // A delegation or DNAME added or removed above existing names:
        // what is authoritative below changed; a whole re-sign follows.
        let summary = edit.publish().await?;
        if let Err(e) = crate::sign_after_write(store, zone, summary.ver, None, true).await {
            tracing::warn!(%zone, error = %e, "the edit is in; the re-sign it needs is left to the next signer");
        }
        return Ok((summary, None));
    }
    let touched = signer.take_touched();
    if edit.names().is_empty() && touched.is_empty() {
        return Ok((edit.publish().await?, Some(signer)));
    }
    signer.sign_soa(store, edit.served_serial()).await?;
    let touched = [touched, signer.take_touched()].concat();
    edit.put_images(signer.take_images());
    edit.note_signed(&touched);
    Ok((edit.publish().await?, Some(signer)))
}
