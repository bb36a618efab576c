//! The end of a one-zone import: a secured zone's data signed, the
//! version switched (replace) or the merge published, then what others
//! handed over signed.
//!
//! ```text
//!  replace of a secured zone ─► sign_new_version (not served yet: no lease)
//!  signed merge              ─► sign_merge_soa with the serial served now
//!  ─► switch_signed_replace (under the zone lock) or ZoneWriter::finish
//!  ─► MergeSigning::after_switch
//! ```

use super::signed_merge::{zone_secured, MergeSigning};
use super::ImportError;
use backend_mongo::lock::ZONE_LOCK;
use backend_mongo::writer::LOCK_WAIT;
use backend_mongo::{Store, WriteMode, ZoneWriter};
use dns::ZoneInfo;
use signer::merge::MergeSigner;
use std::time::Duration;

/// Finishes a written import and returns the zone as now served.
///
/// A secured zone stays signed (docs/dnssec.md): a new version is signed
/// before readers switch to it; a merge was signed batch by batch, and its
/// SOA is signed with the new serial before `finish` publishes it.
/// `skip` is the records a killed run stored; `start_gen` the zone's
/// generation when the import began.
pub(super) async fn finish_import(
    store: &Store,
    writer: ZoneWriter,
    mut signing: MergeSigning,
    grace: Duration,
    skip: u64,
    start_gen: i64,
) -> Result<ZoneInfo, ImportError> {
    let signed_replace = sign_new_version(store, &writer).await?;
    if let Some(signer) = signing.signer.as_mut() {
        sign_merge_soa(store, &writer, signer).await?;
    }
    // An unsigned merge is signed after the switch from the generation it
    // moved the zone at; a resumed run skipped records a killed one wrote
    // unsigned, before any generation it knows of: from the start then.
    let unsigned_since =
        (signing.signer.is_none() && writer.mode() == WriteMode::Merge).then(|| match skip {
            0 => writer.moved_at_gen().unwrap_or(start_gen),
            _ => 0,
        });
    let mut zone = match signed_replace {
        true => switch_signed_replace(store, writer, grace).await?,
        false => writer.finish(grace).await?,
    };
    signing
        .after_switch(store, &mut zone, unsigned_since, start_gen)
        .await?;
    Ok(zone)
}

/// Signs the new version of a replace into a secured zone; true when it
/// did. The version is not served yet: no other signer touches it, so
/// signing it needs no lease (`resign --follow` re-signs after the switch).
async fn sign_new_version(store: &Store, writer: &ZoneWriter) -> Result<bool, ImportError> {
    if writer.mode() != WriteMode::Replace || !zone_secured(store, writer.zone()).await? {
        return Ok(false);
    }
    let served_serial = writer.previous().map(|p| p.serial);
    let signed =
        signer::sign_after_write(store, writer.zone(), writer.ver(), served_serial, false).await;
    if let Err(e) = signed {
        // A version taken over by another writer is being deleted: say
        // so, rather than what signing its missing nodes found.
        writer.ensure_still_pending().await?;
        return Err(ImportError::signing(e));
    }
    Ok(true)
}

/// Signs a signed merge's SOA past the serial as served now (other
/// writers may have moved it), and hands the writer the signed names and
/// their before-images for the journal.
async fn sign_merge_soa(
    store: &Store,
    writer: &ZoneWriter,
    signer: &mut MergeSigner,
) -> Result<(), ImportError> {
    let served = store
        .find_zone(writer.zone())
        .await?
        .map_or(0, |z| z.serial);
    signer
        .sign_soa(store, served)
        .await
        .map_err(ImportError::signing)?;
    writer.note_signed(std::iter::once(writer.zone()));
    writer.keep_signed_images(signer.take_images());
    Ok(())
}

/// Publishes a signed replace: under the zone lock, its SOA moved past
/// the served serial and signed again when other writers moved that on
/// while the new version was signed (else the switch would move it
/// unsigned), then the switch; the old version deleted after `grace`.
async fn switch_signed_replace(
    store: &Store,
    writer: ZoneWriter,
    grace: Duration,
) -> Result<ZoneInfo, ImportError> {
    let zone = writer.zone().clone();
    let fence = store
        .lock(ZONE_LOCK, &zone, "import-switch", LOCK_WAIT)
        .await?;
    let switched = async {
        let Some(served) = store.find_zone(&zone).await? else {
            return Err(ImportError::Zone(format!(
                "zone {zone} is no longer served"
            )));
        };
        if let Err(e) = signer::soa::sign_soa_past(store, &zone, writer.ver(), served.serial).await
        {
            writer.ensure_still_pending().await?;
            return Err(ImportError::signing(e));
        }
        Ok(writer
            .switch_under(&fence, served.ver, Default::default())
            .await?)
    }
    .await;
    fence.release().await?;
    let switched = switched?;
    if switched.old.is_some() {
        store.collect_old_versions(&zone, grace, &|_| {}).await?;
    }
    Ok(switched.zone)
}
