//! Signing the apex SOA with a new serial: for a signing writer before it
//! publishes, and for a replace whose served serial moved on while its new
//! version was signed.
//!
//! ```text
//!  with_serial(soa, serial, keys, window) ─► rdata with the serial, digest,
//!     one RRSIG per ZSK
//!  sign_soa_past(zone, ver, served) ─► the apex of `ver` read ─► its serial
//!     already after `served`? nothing ─► else with_serial(next) ─► one update
//!  stored_soa(zone, ver) ─► the apex SOA of `ver` as stored (or NoSoa)
//! ```

use crate::plan::{self, KeySet, SignOptions};
use crate::{next_serial, SignError, Validity};
use backend_mongo::dnssec_store::{NodeChange, SignedRRset};
use backend_mongo::Store;
use dns::dnssec::rrset_digest;
use dns::serial::{serial_gt, soa_serial};
use dns::{Name, RType};

/// The apex SOA of version `ver` of `zone` as stored, its signatures
/// with it; an error when the apex or its SOA is missing.
pub(crate) async fn stored_soa(
    store: &Store,
    zone: &Name,
    ver: i64,
) -> Result<SignedRRset, SignError> {
    let no_soa = || plan::PlanError::NoSoa(zone.to_string());
    let apex = store.read_full_node(zone, ver, zone).await?;
    let soa = apex.ok_or_else(no_soa)?.get(RType::SOA).cloned();
    Ok(soa.ok_or_else(no_soa)?)
}

/// `soa` with serial `serial`, its digest, and one signature per ZSK of
/// `keys` over the validity window of `options`.
pub(crate) fn with_serial(
    zone: &Name,
    mut soa: SignedRRset,
    serial: u32,
    keys: &KeySet,
    options: &SignOptions,
) -> SignedRRset {
    let mut rd = soa.rrset.rdata[0].to_vec();
    let n = rd.len();
    rd[n - 20..n - 16].copy_from_slice(&serial.to_be_bytes());
    soa.rrset.rdata = vec![rd.into_boxed_slice()];
    soa.sd = Some(rrset_digest(soa.rrset.ttl, &soa.rrset.rdata));
    soa.sigs = keys
        .zsks
        .iter()
        .map(|k| {
            k.sign_rrset(
                zone,
                RType::SOA,
                soa.rrset.ttl,
                &soa.rrset.rdata,
                options.inception,
                options.expiration_of(zone, RType::SOA),
            )
            .into_boxed_slice()
        })
        .collect();
    soa
}

/// Makes the apex SOA of version `ver` of secured `zone` come after
/// `served`, signed: nothing when it already does (returns `None`), else
/// the next serial, signed with the zone's ZSKs, in one update (returns
/// it). For a replace whose new version was signed while other writers
/// moved the served serial on: called under the zone lock before the
/// switch, it keeps the switch from moving the serial unsigned.
pub async fn sign_soa_past(
    store: &Store,
    zone: &Name,
    ver: i64,
    served: u32,
) -> Result<Option<u32>, SignError> {
    let soa = stored_soa(store, zone, ver).await?;
    let current = soa_serial(&soa.rrset.rdata[0]).unwrap_or(served);
    if serial_gt(current, served) {
        return Ok(None);
    }
    let config = store.dnssec_config(zone).await?;
    let keys = KeySet::load(zone, &store.zone_keys(zone).await?)?;
    let options = crate::sign_options(config.nsec3.clone(), &Validity::of(&config), 0, false);
    let serial = next_serial(&[served, current]);
    let set = with_serial(zone, soa, serial, &keys, &options);
    let change = NodeChange::Own {
        name: zone.clone(),
        rtype: RType::SOA,
        set: Some(set),
    };
    store.apply_changes(zone, ver, &[change]).await?;
    Ok(Some(serial))
}
