//! Key rollovers by policy: from a zone's keys, its policy and the time,
//! the steps due now and the time of the next one. Pure: the signing
//! service applies the steps, re-signs, then stamps each changed key's
//! `since` (so a step takes effect, and its waits start, only once the
//! zone is signed with it; a service killed in between re-signs first).
//!
//! ```text
//!  keys of another algorithm than the policy's ─► algorithm rollover
//!     new keys signing ─(max TTL + propagation)─► new keys published (active)
//!     ─(parent serves the new DS; + DS TTL + propagation)─► old keys withdrawn
//!     (signing only) ─(DNSKEY TTL + propagation)─► old keys removed
//!  ZSK, pre-publication (RFC 7583 §3.2.1):
//!     lifetime or `rollover` ─► new published ─(DNSKEY TTL + propagation)─►
//!     new active, old retired ─(max TTL + propagation)─► old removed
//!  KSK or CSK, double signature (RFC 7583 §3.3.2, §3.4):
//!     lifetime or `rollover` ─► new published (CDS/CDNSKEY list it)
//!     ─(DNSKEY TTL + propagation)─► new active beside the old
//!     ─(parent serves the new DS; + DS TTL + propagation)─► old retired
//!     (out of CDS) ─(DNSKEY TTL, CSK: max TTL, + propagation)─► old removed
//! ```
//!
//! A key whose `since` is unset is a step not yet in effect: nothing else
//! is decided until the zone has been re-signed and the key stamped.

use backend_mongo::dnssec_store::{KeyState, StoredKey};
use backend_mongo::policy::Policy;

/// One thing to do to a zone's keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyStep {
    /// Make a new key.
    Create {
        /// DNSKEY flags (257 SEP, 256 ZSK).
        flags: u16,
        /// Algorithm.
        algorithm: u8,
        /// Its first state.
        state: KeyState,
    },
    /// Move a key to another state.
    Move {
        /// The key's `_id`.
        id: String,
        /// The new state.
        state: KeyState,
    },
    /// Delete a key.
    Remove {
        /// The key's `_id`.
        id: String,
    },
    /// Ask the parent's servers whether they serve this key's DS.
    CheckParent {
        /// The key's `_id`.
        id: String,
    },
}

/// What is due, and what comes next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// Steps to take now, in order.
    pub steps: Vec<KeyStep>,
    /// The next timed step: when (seconds since the epoch) and what.
    pub next: Option<(i64, String)>,
    /// Something only the outside can move: the parent's DS.
    pub waiting: Option<String>,
    /// Keys changed but not yet signed with: re-sign and stamp them.
    pub unstamped: bool,
}

impl Schedule {
    fn at(&mut self, when: i64, now: i64, what: String, step: impl FnOnce() -> Vec<KeyStep>) {
        if when <= now {
            self.steps.extend(step());
        } else if self.next.as_ref().is_none_or(|(t, _)| when < *t) {
            self.next = Some((when, what));
        }
    }
}

/// Seconds since the epoch of a key's `since`.
fn since(k: &StoredKey) -> i64 {
    k.since.map_or(0, |t| t.timestamp_millis() / 1000)
}

fn secs(v: u64) -> i64 {
    v.min(i64::MAX as u64 / 4) as i64
}

/// The waits of a policy, in seconds.
struct Waits {
    /// A DNSKEY RRset change reaches every cache.
    dnskey: i64,
    /// Signatures made before a change leave every cache.
    sigs: i64,
    propagation: i64,
}

impl Waits {
    fn of(p: &Policy) -> Waits {
        let propagation = secs(p.propagation_delay);
        Waits {
            dnskey: i64::from(p.dnskey_ttl) + propagation,
            sigs: secs(p.zone_max_ttl) + propagation,
            propagation,
        }
    }
}

/// The steps due at `now` for a zone with `keys` under `policy`.
pub fn schedule(policy: &Policy, keys: &[StoredKey], now: i64) -> Schedule {
    let mut s = Schedule {
        unstamped: keys.iter().any(|k| k.since.is_none()),
        ..Schedule::default()
    };
    if s.unstamped || keys.is_empty() {
        return s;
    }
    let w = Waits::of(policy);
    let (current, old): (Vec<&StoredKey>, Vec<&StoredKey>) =
        keys.iter().partition(|k| k.algorithm == policy.algorithm);
    if !old.is_empty() {
        algorithm_rollover(policy, &w, &current, &old, now, &mut s);
        return s;
    }
    let (sep, zsk): (Vec<&StoredKey>, Vec<&StoredKey>) = current.iter().partition(|k| k.is_ksk());
    zsk_rollover(policy, &w, &zsk, now, &mut s);
    sep_rollover(policy, &w, &sep, now, &mut s);
    s
}

/// ZSKs: retired ones removed, a ready successor activated, a due one
/// succeeded. Under a CSK policy, ZSKs are retired and removed.
fn zsk_rollover(policy: &Policy, w: &Waits, zsks: &[&StoredKey], now: i64, s: &mut Schedule) {
    for k in zsks.iter().filter(|k| k.state == KeyState::Retired) {
        let id = k.id.clone();
        s.at(
            since(k) + w.sigs,
            now,
            format!("remove ZSK {}", k.tag),
            || vec![KeyStep::Remove { id }],
        );
    }
    let active: Vec<&&StoredKey> = zsks
        .iter()
        .filter(|k| k.state == KeyState::Active)
        .collect();
    if policy.csk {
        s.steps.extend(active.iter().map(|k| KeyStep::Move {
            id: k.id.clone(),
            state: KeyState::Retired,
        }));
        return;
    }
    let published: Vec<&&StoredKey> = zsks
        .iter()
        .filter(|k| k.state == KeyState::Published)
        .collect();
    if let Some(new) = published.iter().max_by_key(|k| k.created) {
        let mut steps = vec![KeyStep::Move {
            id: new.id.clone(),
            state: KeyState::Active,
        }];
        steps.extend(active.iter().map(|k| KeyStep::Move {
            id: k.id.clone(),
            state: KeyState::Retired,
        }));
        let what = format!("activate ZSK {}", new.tag);
        s.at(since(new) + w.dnskey, now, what, || steps);
        return;
    }
    match active.iter().max_by_key(|k| k.created) {
        Some(cur) => {
            let due = match (cur.roll, policy.zsk_lifetime) {
                (true, _) => Some(now),
                (false, 0) => None,
                (false, life) => Some(since(cur) + secs(life)),
            };
            if let Some(due) = due {
                s.at(due, now, format!("roll ZSK {}", cur.tag), || {
                    vec![create(policy, 256, KeyState::Published)]
                });
            }
        }
        None => s.steps.push(create(policy, 256, KeyState::Published)),
    }
}

/// KSKs or CSKs: retired ones removed, a ready successor activated beside
/// the old one, the old one retired once the parent serves the new DS, a
/// due one succeeded.
fn sep_rollover(policy: &Policy, w: &Waits, seps: &[&StoredKey], now: i64, s: &mut Schedule) {
    let role = if policy.csk { "CSK" } else { "KSK" };
    let remove_wait = if policy.csk {
        w.sigs.max(w.dnskey)
    } else {
        w.dnskey
    };
    for k in seps.iter().filter(|k| k.state == KeyState::Retired) {
        let id = k.id.clone();
        s.at(
            since(k) + remove_wait,
            now,
            format!("remove {role} {}", k.tag),
            || vec![KeyStep::Remove { id }],
        );
    }
    let mut active: Vec<&&StoredKey> = seps
        .iter()
        .filter(|k| k.state == KeyState::Active)
        .collect();
    active.sort_by_key(|k| k.created);
    if let Some(new) = seps
        .iter()
        .filter(|k| k.state == KeyState::Published)
        .max_by_key(|k| k.created)
    {
        let id = new.id.clone();
        s.at(
            since(new) + w.dnskey,
            now,
            format!("activate {role} {}", new.tag),
            || {
                vec![KeyStep::Move {
                    id,
                    state: KeyState::Active,
                }]
            },
        );
        return;
    }
    if let [older @ .., new] = active.as_slice() {
        if !older.is_empty() {
            let steps = older
                .iter()
                .map(|k| KeyStep::Move {
                    id: k.id.clone(),
                    state: KeyState::Retired,
                })
                .collect();
            wait_for_ds(w, new, now, format!("retire the old {role}"), steps, s);
            return;
        }
        let due = match (new.roll, policy.ksk_lifetime) {
            (true, _) => Some(now),
            (false, 0) => None,
            (false, life) => Some(since(new) + secs(life)),
        };
        if let Some(due) = due {
            s.at(due, now, format!("roll {role} {}", new.tag), || {
                vec![create(policy, 257, KeyState::Published)]
            });
        }
    }
}

/// `then` once the parent has served `new`'s DS for its TTL and the
/// propagation delay; until then a parent check (or the wait) is due.
fn wait_for_ds(
    w: &Waits,
    new: &StoredKey,
    now: i64,
    what: String,
    then: Vec<KeyStep>,
    s: &mut Schedule,
) {
    match new.ds_seen {
        None => {
            s.waiting = Some(format!(
                "the parent to serve the DS of key {} (CDS/CDNSKEY published; \
                 `mongodns-sign ksk-submitted` once it does)",
                new.tag
            ));
            s.steps.push(KeyStep::CheckParent { id: new.id.clone() });
        }
        Some((seen, ttl)) => {
            let at = seen.timestamp_millis() / 1000 + i64::from(ttl) + w.propagation;
            s.at(at, now, what, || then);
        }
    }
}

/// RFC 6781 §4.1.4: new keys sign before they are published, the DS
/// changes, the old keys are withdrawn before they stop signing.
fn algorithm_rollover(
    policy: &Policy,
    w: &Waits,
    current: &[&StoredKey],
    old: &[&StoredKey],
    now: i64,
    s: &mut Schedule,
) {
    if current.is_empty() {
        s.steps.push(create(policy, 257, KeyState::Signing));
        if !policy.csk {
            s.steps.push(create(policy, 256, KeyState::Signing));
        }
        return;
    }
    let latest = |keys: &[&StoredKey]| keys.iter().map(|k| since(k)).max().unwrap_or(0);
    if current.iter().any(|k| k.state == KeyState::Signing) {
        let steps = current
            .iter()
            .filter(|k| k.state == KeyState::Signing)
            .map(|k| KeyStep::Move {
                id: k.id.clone(),
                state: KeyState::Active,
            })
            .collect();
        let what = format!("publish the algorithm {} keys", policy.algorithm);
        s.at(latest(current) + w.sigs, now, what, || steps);
        return;
    }
    if old.iter().any(|k| k.is_published()) {
        let Some(new_sep) = current
            .iter()
            .filter(|k| k.is_ksk())
            .max_by_key(|k| k.created)
        else {
            s.steps.push(create(policy, 257, KeyState::Signing));
            return;
        };
        let steps = old
            .iter()
            .map(|k| match k.state {
                KeyState::Active => KeyStep::Move {
                    id: k.id.clone(),
                    state: KeyState::Signing,
                },
                _ => KeyStep::Remove { id: k.id.clone() },
            })
            .collect();
        wait_for_ds(
            w,
            new_sep,
            now,
            "withdraw the old algorithm's keys".into(),
            steps,
            s,
        );
        return;
    }
    let steps = old
        .iter()
        .map(|k| KeyStep::Remove { id: k.id.clone() })
        .collect();
    let what = "remove the old algorithm's keys".to_string();
    s.at(latest(old) + w.dnskey, now, what, || steps);
}

fn create(policy: &Policy, flags: u16, state: KeyState) -> KeyStep {
    KeyStep::Create {
        flags,
        algorithm: policy.algorithm,
        state,
    }
}

#[cfg(test)]
mod tests;
