//! `secure-zone`: keys made when missing, every RRset signed, the chain
//! built, the whole published at once as a new version.
//!
//! ```text
//!  secure_zone_switch ─► the signing lease ─► secure_under_lease:
//!     ensure_keys ─► rebuild_and_switch (up to three attempts, each
//!     Securing::attempt): begin_rebuild (read served) ─► plan (sign,
//!     chain) ─► sign_and_insert into the new version ─► catch-up passes
//!     ─► switch_caught_up (zone lock) ─► secured = true
//!  secure_zone = the same, then cleanup of the replaced version
//! ```

use crate::plan::KeySet;
use crate::rebuild::{
    rebuild_and_switch, sign_and_insert, switch_caught_up, Attempted, Built, Rebuild, Rebuilder,
    Site,
};
use crate::{
    catchup, cleanup, crypto, lease, merge, plan, sign_options, Progress, Report, SecureOptions,
    SignError, Steps,
};
use backend_mongo::dnssec_store::{DnssecConfig, KeyState, StoredKey};
use backend_mongo::Store;
use dns::Name;

/// Secures `zone`: makes keys if it has none, signs every authoritative
/// RRset, builds the chain, and publishes it all at once as a new version;
/// then deletes the version it replaced ([`cleanup`]). Re-running after a
/// failure reuses the stored keys and completes.
pub async fn secure_zone(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let mut report = secure_zone_switch(store, zone, options, progress).await?;
    let started = std::time::Instant::now();
    let expected = if report.old_ver.is_some() {
        report.nodes
    } else {
        0
    };
    report.cleanup = cleanup(store, zone, options.grace, expected, progress).await?;
    report.timings.push(("cleanup", started.elapsed()));
    Ok(report)
}

/// [`secure_zone`] up to the switch: the signed version is served when
/// this returns; the version it replaced is listed in the zone's
/// `old_vers` (never served) for [`cleanup`] or any later writer to delete.
///
/// Holds the zone's signing lease throughout. Merge writers go on while it
/// signs: what they publish meanwhile is copied into the new version and
/// signed ([`catchup`]), pass after pass until a pass is small; then, under
/// the zone lock (merge writers wait on it for that long: milliseconds), a
/// last pass, the SOA moved past the served serial, and the switch. A
/// replace switching meanwhile makes it start over (three attempts).
pub async fn secure_zone_switch(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
) -> Result<Report, SignError> {
    let lease = lease::take(store, zone, "secure-zone", lease::lease_wait()).await?;
    let r = secure_under_lease(store, zone, options, progress, &lease).await;
    lease.release_with(r).await
}

/// Keys of `zone`, made (and stored) when it has none.
async fn ensure_keys(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
) -> Result<Vec<StoredKey>, SignError> {
    let keys = store.zone_keys(zone).await?;
    if !keys.is_empty() {
        return Ok(keys);
    }
    let mut new = vec![crypto::generate(
        zone,
        options.algorithm,
        257,
        KeyState::Active,
    )?];
    if !options.csk {
        new.push(crypto::generate(
            zone,
            options.algorithm,
            256,
            KeyState::Active,
        )?);
    }
    // One command: a run killed here leaves both keys or neither.
    store.insert_keys(&new).await?;
    Ok(new)
}

async fn secure_under_lease(
    store: &Store,
    zone: &Name,
    options: &SecureOptions,
    progress: &dyn Progress,
    lease: &lease::Lease,
) -> Result<Report, SignError> {
    let steps = Steps::new();
    let mut config = store.dnssec_config(zone).await?;
    config.secured = true;
    config.nsec3 = options.nsec3.clone();
    config.cds = options.cds;
    // Every node it writes carries its exact `sx` (FullNode::to_doc).
    config.marked = true;
    let keys = ensure_keys(store, zone, options).await?;
    let at = Site {
        store,
        zone,
        lease,
        progress,
    };
    let how = Securing {
        options,
        keys,
        config,
    };
    rebuild_and_switch(at, steps, &how).await?.map_err(|why| {
        SignError::Usage(format!(
            "zone {zone}: {why}; signing started over three times, giving up (try again)"
        ))
    })
}

/// secure-zone's new version: every RRset signed with `keys`, the chain
/// built, the zone's DNSSEC settings `config` set by the switch.
struct Securing<'a> {
    options: &'a SecureOptions,
    keys: Vec<StoredKey>,
    config: DnssecConfig,
}

impl Rebuilder for Securing<'_> {
    async fn attempt(&self, at: Site<'_>, rebuild: Rebuild, steps: &mut Steps) -> Attempted {
        let Site {
            store,
            zone,
            lease,
            progress,
        } = at;
        let Securing {
            options,
            keys,
            config,
        } = self;
        let Rebuild {
            served,
            writer,
            current,
            serial,
        } = rebuild;
        let mut opts = sign_options(
            options.nsec3.clone(),
            &options.validity,
            options.threads,
            true,
        );
        opts.cds = options.cds;
        let keyset = KeySet::load(zone, keys)?;
        let prepared = plan::prepare(zone, &current, &keyset, &opts, Some(serial))?;
        drop(current);
        steps.end("chain");
        let (written, stats, chain) = sign_and_insert(
            store,
            zone,
            writer.ver(),
            prepared,
            &keyset,
            &opts,
            progress,
        )
        .await?;
        steps.end("sign+write");
        let signer =
            merge::MergeSigner::with_config(store, zone, writer.ver(), config.clone(), Some(chain))
                .await?;
        let mut catch_up = catchup::CatchUp::new(store, zone, &served, writer.ver(), Some(signer));
        let switched = switch_caught_up(
            store,
            zone,
            writer,
            &mut catch_up,
            Some(config),
            lease,
            progress,
        )
        .await?;
        if let Err(catchup::StartOver(why)) = &switched {
            tracing::info!(%zone, reason = %why, "secure-zone starts over");
        }
        Ok(switched.map(|switched| Built {
            stats,
            written: written + catch_up.copied,
            switched,
        }))
    }
}
