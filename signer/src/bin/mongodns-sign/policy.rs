//! The policy commands: `add-policy`, `list-policies`, `set-policy`,
//! `rollover`, `ksk-submitted`.
//!
//! ```text
//!  add-policy NAME [settings] ─► policies {_id: NAME} (defaults for the rest)
//!  set-policy ZONE --policy NAME [--parent ADDR]… ─► zone's dnssec.policy (a copy)
//!  rollover ZONE ksk|zsk|csk ─► the active key's `roll` ─► the service rolls it
//!  ksk-submitted ZONE ─► the newest SEP key's ds_seen = now
//! ```

use crate::parse_zone;
use backend_mongo::bson::{Bson, DateTime};
use backend_mongo::dnssec_store::KeyState;
use backend_mongo::policy::{Policy, DEFAULT_POLICY};
use backend_mongo::Store;
use signer::{crypto, SignError};

/// The arguments of `add-policy`: each setting defaults to the built-in
/// policy's. Durations take s, m, h or d (`90d`, `3600`).
#[derive(clap::Args)]
pub(crate) struct AddPolicyArgs {
    /// The policy's name.
    name: String,
    /// Algorithm of new keys: ecdsap256sha256 (13), ed25519 (15), rsasha256 (8).
    #[arg(long)]
    algorithm: Option<String>,
    /// One combined signing key (CSK) instead of a KSK and a ZSK.
    #[arg(long)]
    csk: bool,
    /// KSK (or CSK) lifetime; 0: rolled only when asked.
    #[arg(long, value_parser = parse_duration)]
    ksk_lifetime: Option<u64>,
    /// ZSK lifetime; 0: rolled only when asked.
    #[arg(long, value_parser = parse_duration)]
    zsk_lifetime: Option<u64>,
    /// Validity of new signatures.
    #[arg(long, value_parser = parse_duration)]
    rrsig_lifetime: Option<u64>,
    /// Signatures with less left than this are replaced.
    #[arg(long, value_parser = parse_duration)]
    rrsig_refresh: Option<u64>,
    /// Up to this much taken off each signature's validity.
    #[arg(long, value_parser = parse_duration)]
    rrsig_jitter: Option<u64>,
    /// TTL of DNSKEY, CDS and CDNSKEY.
    #[arg(long, value_parser = parse_duration)]
    dnskey_ttl: Option<u64>,
    /// Time for a change to reach every secondary.
    #[arg(long, value_parser = parse_duration)]
    propagation_delay: Option<u64>,
    /// The largest TTL in the zone.
    #[arg(long, value_parser = parse_duration)]
    zone_max_ttl: Option<u64>,
    /// The parent's DS TTL when it cannot be asked.
    #[arg(long, value_parser = parse_duration)]
    ds_ttl: Option<u64>,
    /// How often the parent is asked for the new DS during a rollover.
    #[arg(long, value_parser = parse_duration)]
    ds_check_interval: Option<u64>,
    /// Do not publish CDS and CDNSKEY.
    #[arg(long)]
    no_cds: bool,
    /// NSEC3 (RFC 9276: no salt, 0 iterations) instead of NSEC.
    #[arg(long)]
    nsec3: bool,
    /// NSEC3 opt-out.
    #[arg(long, requires = "nsec3")]
    opt_out: bool,
}

/// The arguments of `set-policy`.
#[derive(clap::Args)]
pub(crate) struct SetPolicyArgs {
    /// The zone.
    zone: String,
    /// The policy's name (`default`: the built-in one); `-` removes it.
    #[arg(long, default_value = DEFAULT_POLICY)]
    policy: String,
    /// A server of the parent zone (ADDR:PORT), asked for the DS during
    /// KSK and CSK rollovers; repeat for several.
    #[arg(long = "parent")]
    parents: Vec<String>,
}

/// The arguments of `rollover`.
#[derive(clap::Args)]
pub(crate) struct RolloverArgs {
    /// The zone.
    zone: String,
    /// Which key: ksk, zsk or csk.
    role: String,
}

/// The zone of `ksk-submitted`.
#[derive(clap::Args)]
pub(crate) struct SubmittedArgs {
    /// The zone.
    zone: String,
}

/// `90d`, `12h`, `30m`, `45s` or plain seconds.
pub(crate) fn parse_duration(text: &str) -> Result<u64, String> {
    let (num, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = num.parse().map_err(|_| format!("bad duration {text}"))?;
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("bad duration {text}: use s, m, h or d")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("duration {text} too large"))
}

/// `add-policy`: stores a named policy; zones with it take the change at
/// the service's next look.
pub(crate) async fn add_policy(store: &Store, a: AddPolicyArgs) -> Result<(), SignError> {
    let mut p = Policy::defaults(&a.name);
    if let Some(alg) = &a.algorithm {
        p.algorithm = crate::parse_alg(alg)?;
    }
    p.csk = a.csk;
    let set = |v: Option<u64>, field: &mut u64| {
        if let Some(v) = v {
            *field = v;
        }
    };
    set(a.ksk_lifetime, &mut p.ksk_lifetime);
    set(a.zsk_lifetime, &mut p.zsk_lifetime);
    set(a.rrsig_lifetime, &mut p.rrsig_lifetime);
    set(a.rrsig_refresh, &mut p.rrsig_refresh);
    set(a.rrsig_jitter, &mut p.rrsig_jitter);
    set(a.propagation_delay, &mut p.propagation_delay);
    set(a.zone_max_ttl, &mut p.zone_max_ttl);
    set(a.ds_ttl, &mut p.ds_ttl);
    set(a.ds_check_interval, &mut p.ds_check_interval);
    if let Some(ttl) = a.dnskey_ttl {
        p.dnskey_ttl =
            u32::try_from(ttl).map_err(|_| SignError::Usage("--dnskey-ttl too large".into()))?;
    }
    p.cds = !a.no_cds;
    if a.nsec3 {
        p.nsec3 = Some(backend_mongo::dnssec_store::Nsec3Config {
            iterations: 0,
            salt: Vec::new(),
            opt_out: a.opt_out,
        });
    }
    p.check()
        .map_err(|e| SignError::Usage(format!("policy {}: {e}", p.name)))?;
    store.put_policy(&p).await?;
    println!("policy {} stored", p.name);
    print_policy(&p);
    Ok(())
}

/// `list-policies`: every stored policy (and the built-in default).
pub(crate) async fn list_policies(store: &Store) -> Result<(), SignError> {
    let mut all = store.policies().await?;
    if !all.iter().any(|p| p.name == DEFAULT_POLICY) {
        all.insert(0, Policy::defaults(DEFAULT_POLICY));
    }
    for p in &all {
        print_policy(p);
    }
    Ok(())
}

/// One policy on one line.
pub(crate) fn print_policy(p: &Policy) {
    println!(
        "policy {}: {} {}, KSK lifetime {}, ZSK lifetime {}, signatures {} (refresh {}, jitter {}), \
         DNSKEY TTL {} s, propagation {}, max TTL {}, DS TTL {}, {}{}",
        p.name,
        crypto::algorithm_name(p.algorithm),
        if p.csk { "CSK" } else { "KSK+ZSK" },
        life(p.ksk_lifetime),
        life(p.zsk_lifetime),
        span(p.rrsig_lifetime),
        span(p.rrsig_refresh),
        span(p.rrsig_jitter),
        p.dnskey_ttl,
        span(p.propagation_delay),
        span(p.zone_max_ttl),
        span(p.ds_ttl),
        if p.nsec3.is_some() { "NSEC3" } else { "NSEC" },
        if p.cds { ", CDS/CDNSKEY" } else { "" }
    );
}

fn life(secs: u64) -> String {
    match secs {
        0 => "manual".into(),
        s => span(s),
    }
}

/// Seconds for people: the largest whole unit.
pub(crate) fn span(secs: u64) -> String {
    for (unit, n) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= n && secs.is_multiple_of(n) {
            return format!("{}{unit}", secs / n);
        }
    }
    format!("{secs}s")
}

/// `set-policy`: the zone follows a policy (a copy of it is kept with
/// the zone, so every signer reads it with the zone).
pub(crate) async fn set_policy(store: &Store, a: SetPolicyArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let config = store.dnssec_config(&zone).await?;
    if a.policy == "-" {
        store
            .set_dnssec_fields(&zone, vec![("policy", Bson::Null)])
            .await?;
        println!("zone {zone}: no policy (signatures and keys no longer managed)");
        return Ok(());
    }
    let policy = store.policy(&a.policy).await?.ok_or_else(|| {
        SignError::Usage(format!("no policy {} (add-policy makes one)", a.policy))
    })?;
    let mut fields = vec![("policy", Bson::Document(policy.to_doc()))];
    if config.secured {
        fields.push(("cds", Bson::Boolean(policy.cds)));
    }
    if !a.parents.is_empty() {
        fields.push(("parents", Bson::from(a.parents.clone())));
    }
    store.set_dnssec_fields(&zone, fields).await?;
    println!(
        "zone {zone}: policy {}{}",
        policy.name,
        if config.secured {
            ""
        } else {
            " (the signing service secures it at its next look)"
        }
    );
    if config.secured && config.nsec3.is_some() != policy.nsec3.is_some() {
        println!(
            "note: the zone keeps its {} chain; run secure-zone{} to change it",
            if config.nsec3.is_some() {
                "NSEC3"
            } else {
                "NSEC"
            },
            if policy.nsec3.is_some() {
                " --nsec3"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// `rollover`: asks the service to roll the zone's active key of a role now.
pub(crate) async fn rollover(store: &Store, a: RolloverArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let config = store.dnssec_config(&zone).await?;
    if config.policy.is_none() {
        return Err(SignError::Usage(format!(
            "zone {zone} has no policy: set one (set-policy) and run the signing service (serve)"
        )));
    }
    let sep = match a.role.to_ascii_lowercase().as_str() {
        "ksk" | "csk" => true,
        "zsk" => false,
        other => {
            return Err(SignError::Usage(format!(
                "role {other}: use ksk, zsk or csk"
            )))
        }
    };
    let keys = store.zone_keys(&zone).await?;
    let mut key = keys
        .into_iter()
        .filter(|k| k.is_ksk() == sep && k.state == KeyState::Active)
        .max_by_key(|k| k.created)
        .ok_or_else(|| SignError::Usage(format!("zone {zone} has no active {}", a.role)))?;
    key.roll = true;
    store.replace_key(&key).await?;
    println!(
        "rollover of {} tag {} asked; the signing service starts it at its next look",
        key.role(),
        key.tag
    );
    Ok(())
}

/// `ksk-submitted`: the parent serves the new KSK's DS (for parents that
/// cannot be asked).
pub(crate) async fn ksk_submitted(store: &Store, a: SubmittedArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let config = store.dnssec_config(&zone).await?;
    let ttl = config.policy.as_ref().map_or(86_400, |p| p.ds_ttl);
    let keys = store.zone_keys(&zone).await?;
    let mut key = keys
        .into_iter()
        .filter(|k| k.is_ksk() && k.ds_seen.is_none() && k.state == KeyState::Active)
        .max_by_key(|k| k.created)
        .ok_or_else(|| {
            SignError::Usage(format!("zone {zone} has no active KSK waiting for its DS"))
        })?;
    key.ds_seen = Some((DateTime::now(), u32::try_from(ttl).unwrap_or(u32::MAX)));
    store.replace_key(&key).await?;
    println!(
        "DS of {} tag {} taken as served by the parent (DS TTL {ttl} s)",
        key.role(),
        key.tag
    );
    Ok(())
}
