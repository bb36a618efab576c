//! Key steps of the policy applied to the database, and the parent asked.
//!
//! ```text
//!  Create ─► crypto::generate ─► insert (since unset)
//!  Move ─► state changed (since unset)       Remove ─► deleted
//!  CheckParent ─► at most every ds_check_interval: parent_serves(DS)
//!     ─► ds_seen (now, the parent's TTL) stored
//!  after the steps: signs_data_anew? ─► a whole re-sign : the apex's
//!     key sets alone ─► stamp ─► every unset since = now
//! ```

use crate::keyroll::KeyStep;
use crate::parent::parent_serves;
use crate::plan::KeySet;
use crate::{crypto, SignError};
use backend_mongo::bson::DateTime;
use backend_mongo::dnssec_store::{DnssecConfig, KeyState, StoredKey};
use backend_mongo::policy::Policy;
use backend_mongo::Store;
use dns::dnssec::ds_rdata;
use dns::Name;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// When each key's DS was last asked for at the parent.
#[derive(Default)]
pub(super) struct ParentChecks(HashMap<String, Instant>);

/// Applies `steps` to the keys of `zone`; returns how many changed a key
/// (and so need a re-sign).
pub(super) async fn apply_steps(
    store: &Store,
    zone: &Name,
    config: &DnssecConfig,
    policy: &Policy,
    keys: &[StoredKey],
    steps: Vec<KeyStep>,
    checks: &mut ParentChecks,
) -> Result<u64, SignError> {
    let mut changed = 0;
    for step in steps {
        let find = |id: &str| keys.iter().find(|k| k.id == id).cloned();
        match step {
            KeyStep::Create {
                flags,
                algorithm,
                state,
            } => {
                let mut key = crypto::generate(zone, algorithm, flags, state)?;
                key.since = None;
                store.insert_key(&key).await?;
                tracing::info!(%zone, tag = key.tag, role = key.role(), state = state.as_str(), "key created");
                changed += 1;
            }
            KeyStep::Move { id, state } => {
                let Some(mut key) = find(&id) else { continue };
                key.state = state;
                key.since = None;
                store.replace_key(&key).await?;
                tracing::info!(%zone, tag = key.tag, state = state.as_str(), "key moved");
                changed += 1;
            }
            KeyStep::Remove { id } => {
                store.delete_key(&id).await?;
                tracing::info!(%zone, key = %id, "key removed");
                changed += 1;
            }
            KeyStep::CheckParent { id } => {
                let Some(key) = find(&id) else { continue };
                check_parent(store, zone, config, policy, key, checks).await?;
            }
        }
    }
    Ok(changed)
}

/// True when the steps between `before` and `after` (the zone's keys as
/// stored) need every RRset signed again: the keys that sign the zone's
/// data differ, or one of them, or a ZSK retired from it, is not stamped
/// yet (a re-sign after its change may not have completed). Otherwise
/// (a key published or removed, a KSK activated or retired) only the
/// apex's key sets change.
pub(super) fn signs_data_anew(zone: &Name, before: &[StoredKey], after: &[StoredKey]) -> bool {
    let signers = |keys: &[StoredKey]| {
        KeySet::load(zone, keys).map(|k| {
            let mut v: Vec<(u16, u8)> = k.zsks.iter().map(|z| (z.tag, z.algorithm)).collect();
            v.sort_unstable();
            v
        })
    };
    let (Ok(was), Ok(now)) = (signers(before), signers(after)) else {
        return true;
    };
    was != now
        || after.iter().any(|k| {
            k.since.is_none()
                && (now.contains(&(k.tag, k.algorithm))
                    || (!k.is_ksk() && k.state == KeyState::Retired))
        })
}

/// Asks the parent's servers for `key`'s DS, at most once per the
/// policy's check interval; stores when it was first seen.
async fn check_parent(
    store: &Store,
    zone: &Name,
    config: &DnssecConfig,
    policy: &Policy,
    mut key: StoredKey,
    checks: &mut ParentChecks,
) -> Result<(), SignError> {
    if config.parents.is_empty() {
        return Ok(());
    }
    let every = Duration::from_secs(policy.ds_check_interval.max(1));
    if checks.0.get(&key.id).is_some_and(|t| t.elapsed() < every) {
        return Ok(());
    }
    checks.0.insert(key.id.clone(), Instant::now());
    let ds = ds_rdata(zone, &key.dnskey_rdata(), key.algorithm);
    let seen = parent_serves(&config.parents, zone, &ds, Duration::from_secs(3))
        .await
        .map_err(|e| SignError::Usage(e.to_string()))?;
    if let Some(ttl) = seen {
        key.ds_seen = Some((DateTime::now(), ttl));
        store.replace_key(&key).await?;
        tracing::info!(%zone, tag = key.tag, ttl, "the parent serves the new DS");
    }
    Ok(())
}

/// Stamps every key whose step was just signed with: `since` = now.
pub(super) async fn stamp(store: &Store, zone: &Name) -> Result<(), SignError> {
    let now = DateTime::now();
    for mut key in store.zone_keys(zone).await? {
        if key.since.is_none() {
            key.since = Some(now);
            store.replace_key(&key).await?;
        }
    }
    Ok(())
}
