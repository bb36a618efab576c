//! A merge into a secured zone, signed as it is written (docs/dnssec.md).
//!
//! ```text
//!  MergeSigning::begin: the zone's signing lease, when free ─► a MergeSigner
//!     (held by another signer: written unsigned, its change records hand the
//!      names to that signer)
//!  signed_jobs: batch by batch in input order, each batch relinking the
//!     NSEC/NSEC3 chain ─► a signer waits for the lease ─► hand_over: the rest
//!     written unsigned
//!  after_switch: a full re-sign when a cut appeared, what was written
//!     unsigned signed, what other writers handed over signed, lease released
//! ```

use super::jobs::{add_stats, Job, Payload};
use super::{ImportError, Progress};
use backend_mongo::lock::SIGN_LEASE;
use backend_mongo::writer::NodeImages;
use backend_mongo::{NodeWrite, Store, WriteMode, WriteStats, ZoneWriter};
use dns::{Name, ZoneInfo};
use signer::lease::Lease;
use signer::merge::MergeSigner;
use tokio::sync::mpsc;

/// The signing side of one import: the zone's lease while this import
/// holds it, and the signer of its batches while it signs them.
pub(super) struct MergeSigning {
    /// The zone's signing lease, when this import took it.
    pub(super) lease: Option<Lease>,
    /// Signs each batch of a merge into a secured zone.
    pub(super) signer: Option<MergeSigner>,
}

impl MergeSigning {
    /// Takes the lease and makes the signer for a merge into a secured
    /// zone; nothing for a replace or an unsecured zone.
    pub(super) async fn begin(
        store: &Store,
        writer: &ZoneWriter,
        start_gen: i64,
    ) -> Result<Self, ImportError> {
        let mut signing = MergeSigning {
            lease: None,
            signer: None,
        };
        let zone = writer.zone();
        if writer.mode() != WriteMode::Merge || !zone_secured(store, zone).await? {
            return Ok(signing);
        }
        signing.lease = signer::lease::take_soon(store, zone, "import")
            .await
            .map_err(ImportError::signing)?;
        if signing.lease.is_none() {
            tracing::info!(zone = %zone,
                "another signer holds the zone's lease: writing unsigned, the holder signs");
            return Ok(signing);
        }
        match MergeSigner::new(store, zone, writer.ver()).await {
            // Before-images of what it signs, for the journal.
            Ok(s) => {
                signing.signer = s.map(|mut s| {
                    s.keep_images(Some(NodeImages::new(zone, writer.ver(), start_gen)));
                    s
                })
            }
            // The version began into was switched away and deleted
            // meanwhile: write unsigned (the merge follows the switch) and
            // sign what was written at the end.
            Err(_) if served_ver(store, zone).await? != Some(writer.ver()) => {
                tracing::info!(zone = %zone,
                    "the zone was switched as the merge began: writing unsigned, signed at the end");
                signing.release_lease().await?;
            }
            Err(e) => return Err(ImportError::signing(e)),
        }
        Ok(signing)
    }

    /// A signer waits for the lease: hands it over; the rest of the import
    /// is written unsigned, and its change records give the names to it.
    pub(super) async fn hand_over(&mut self, writer: &ZoneWriter) -> Result<(), ImportError> {
        self.signer = None;
        self.release_lease().await?;
        writer.note_unsigned();
        tracing::info!(zone = %writer.zone(),
            "a signer waits for the zone's lease: handed over; the rest of the import is written unsigned");
        Ok(())
    }

    async fn release_lease(&mut self) -> Result<(), ImportError> {
        if let Some(lease) = self.lease.take() {
            lease
                .release_with(Ok(()))
                .await
                .map_err(ImportError::signing)?;
        }
        Ok(())
    }

    /// After the switch: re-signs the whole zone when a delegation or
    /// DNAME appeared above existing names, signs what was written unsigned
    /// since `unsigned_since`, and signs what other writers handed over
    /// while this import held the lease. `zone.serial` follows each.
    pub(super) async fn after_switch(
        mut self,
        store: &Store,
        zone: &mut ZoneInfo,
        unsigned_since: Option<i64>,
        start_gen: i64,
    ) -> Result<(), ImportError> {
        let apex = zone.apex.clone();
        if self.signer.as_ref().is_some_and(|s| s.needs_full_resign()) {
            let report = signer::sign_after_write(store, &apex, zone.ver, None, true)
                .await
                .map_err(ImportError::signing)?;
            if let Some(r) = report {
                zone.serial = r.serial;
            }
        }
        if let Some(since) = unsigned_since {
            let lease = self.lease.take();
            let report =
                signer::handoff::sign_unsigned_writes(store, &apex, since, lease, "import")
                    .await
                    .map_err(ImportError::signing)?;
            if let Some(r) = report {
                zone.serial = r.serial;
            }
        }
        if let Some(lease) = self.lease {
            let handed = signer::handoff::sign_handed_over(store, &apex, start_gen).await;
            if let Some(r) = lease
                .release_with(handed)
                .await
                .map_err(ImportError::signing)?
            {
                zone.serial = r.serial;
            }
        }
        Ok(())
    }
}

/// The signed part of a merge: batches signed and acknowledged one at a
/// time until the input ends, or until a signer waits for the zone's lease
/// (then `true`: the caller hands the lease over). Returns the counts and
/// the records written so far.
pub(super) async fn signed_jobs(
    store: &Store,
    writer: &ZoneWriter,
    signer: &mut MergeSigner,
    rx: &mut mpsc::Receiver<Job>,
    skip: u64,
    progress: &dyn Progress,
) -> Result<(WriteStats, u64, bool), ImportError> {
    // The signer writes the names, their chain neighbours and NSEC3
    // owners itself: the change record lists those, marked signed.
    writer.note_signed(std::iter::once(writer.zone()));
    let mut stats = WriteStats::default();
    let mut written = skip;
    while let Some(job) = rx.recv().await {
        let Payload::Nodes(nodes) = job.payload else {
            continue;
        };
        add_stats(
            &mut stats,
            &signed_batch(store, writer, signer, &nodes).await?,
        );
        written += job.records;
        progress.set(written);
        if store.is_wanted(SIGN_LEASE, writer.zone()).await? {
            return Ok((stats, written, true));
        }
    }
    Ok((stats, written, false))
}

/// Writes one batch of a signed merge and acknowledges it under the zone
/// lock; when a replace switched the zone meanwhile, the signer moves to
/// the version now served and the batch is written (signed) there again.
async fn signed_batch(
    store: &Store,
    writer: &ZoneWriter,
    signer: &mut MergeSigner,
    nodes: &[NodeWrite],
) -> Result<WriteStats, ImportError> {
    let mut stats = write_signed(writer, signer, store, nodes).await?;
    while let Some(ver) = writer.acknowledge_signed().await? {
        tracing::info!(zone = %writer.zone(), ver,
            "another writer switched the zone while merging: the batch is signed into the version now served");
        match MergeSigner::new(store, writer.zone(), ver).await {
            Ok(Some(s)) => *signer = s,
            Ok(None) => {
                return Err(ImportError::Zone(format!(
                    "zone {} is no longer secured",
                    writer.zone()
                )))
            }
            // The version vanished under us (replaced again, and deleted):
            // the next acknowledgement names the one served now.
            Err(e) if served_ver(store, writer.zone()).await? != Some(ver) => {
                tracing::info!(error = %e, "the version moved again; following it");
                continue;
            }
            Err(e) => return Err(ImportError::signing(e)),
        }
        stats = write_signed(writer, signer, store, nodes).await?;
    }
    Ok(stats)
}

/// One batch signed and written; the names it touched noted as signed.
async fn write_signed(
    writer: &ZoneWriter,
    signer: &mut MergeSigner,
    store: &Store,
    nodes: &[NodeWrite],
) -> Result<WriteStats, ImportError> {
    let stats = signer
        .write_batch(store, nodes)
        .await
        .map_err(ImportError::signing)?;
    writer.note_signed(signer.take_touched().iter());
    Ok(stats)
}

/// The version of `zone` served now, if it is served.
async fn served_ver(store: &Store, zone: &Name) -> Result<Option<i64>, ImportError> {
    Ok(store.find_zone(zone).await?.map(|z| z.ver))
}

/// True when `zone` is secured (its writes must be signed).
pub(super) async fn zone_secured(store: &Store, zone: &Name) -> Result<bool, ImportError> {
    Ok(signer::handoff::zone_secured(store, zone).await?)
}
