//! `show-zone`: the zone's DNSSEC state, keys with their states and next
//! steps, the policy, the earliest signature expiration (warned about when
//! it is within the refresh window and no signing service holds the zone),
//! DNSKEY and DS records.
//!
//! ```text
//!  dnssec_config + zone_keys ─► header, policy, keys (state, since, DS seen)
//!  keyroll::schedule ─► next step / waiting      earliest_expiry ─► warning
//! ```

use crate::policy::{print_policy, span};
use backend_mongo::bson::DateTime;
use backend_mongo::dnssec_store::{DnssecConfig, StoredKey};
use backend_mongo::lock::SERVICE_LEASE;
use backend_mongo::Store;
use dns::dnssec::ds_rdata;
use dns::encoding::to_hex;
use dns::presentation::rdata_text;
use dns::{Name, RType};
use signer::{crypto, keyroll, SignError, Validity};
use std::time::{SystemTime, UNIX_EPOCH};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn when(t: DateTime) -> String {
    t.try_to_rfc3339_string().unwrap_or_default()
}

fn at(secs: i64) -> String {
    when(DateTime::from_millis(secs.saturating_mul(1000)))
}

/// Prints what `show-zone` shows.
pub(crate) async fn show_zone(store: &Store, zone: &Name) -> Result<(), SignError> {
    let config = store.dnssec_config(zone).await?;
    let keys = store.zone_keys(zone).await?;
    println!("zone {zone}: {}", header(&config));
    if let Some(p) = &config.policy {
        print_policy(p);
        if !config.parents.is_empty() {
            println!("parent servers: {}", config.parents.join(", "));
        }
        let plan = keyroll::schedule(p, &keys, now());
        match (&plan.waiting, &plan.next) {
            (Some(w), _) => println!("next step: waiting for {w}"),
            (None, Some((t, what))) => println!("next step: {what} at {}", at(*t)),
            (None, None) if plan.unstamped => println!("next step: re-sign with the changed keys"),
            (None, None) => println!("next step: none scheduled"),
        }
    }
    if config.secured {
        expiry(store, zone, &config).await?;
    }
    if keys.is_empty() {
        println!("no keys");
        return Ok(());
    }
    print_keys(zone, &keys);
    Ok(())
}

fn header(config: &DnssecConfig) -> String {
    let state = if config.secured {
        "secured"
    } else {
        "not secured"
    };
    let chain = match &config.nsec3 {
        Some(n) => format!(
            ", NSEC3 iterations {} salt {}{}",
            n.iterations,
            if n.salt.is_empty() {
                "-".to_string()
            } else {
                to_hex(&n.salt)
            },
            if n.opt_out { " opt-out" } else { "" }
        ),
        None if config.secured => ", NSEC".to_string(),
        None => String::new(),
    };
    format!("{state}{chain}")
}

/// The earliest signature expiration, and a warning when it falls within
/// the refresh window while no signing service holds the zone.
async fn expiry(store: &Store, zone: &Name, config: &DnssecConfig) -> Result<(), SignError> {
    let Some(info) = store.find_zone(zone).await? else {
        return Ok(());
    };
    let holder = store.lock_holder(SERVICE_LEASE, zone).await?;
    let live = holder.as_ref().filter(|(h, _)| h.until > DateTime::now());
    match live {
        Some((h, _)) => println!("signing service: {}", h.owner),
        None => println!("signing service: none looks after this zone"),
    }
    let Some(soonest) = store.earliest_expiry(zone, info.ver).await? else {
        if !config.marked {
            println!("earliest signature expiration: unknown until the signing service has marked the zone");
        }
        return Ok(());
    };
    let left = soonest - now();
    println!(
        "earliest signature expiration: {} (in {})",
        at(soonest),
        span(left.max(0) as u64)
    );
    let refresh = Validity::of(config).refresh.as_secs() as i64;
    if left < refresh && live.is_none() {
        println!(
            "WARNING: signatures expire within the refresh window ({}) and no signing \
             service runs for this zone: start `mongodns-sign serve` (or run resign) \
             before {}, or validating resolvers will find the zone bogus",
            span(refresh as u64),
            at(soonest)
        );
    }
    Ok(())
}

fn print_keys(zone: &Name, keys: &[StoredKey]) {
    println!("keys:");
    for k in keys {
        println!(
            "  {}  {}  tag {:5}  {} ({})  {}{}  created {}{}{}",
            k.id,
            k.role(),
            k.tag,
            crypto::algorithm_name(k.algorithm),
            k.algorithm,
            k.state.as_str(),
            k.since
                .map_or(" (to be signed with)".to_string(), |t| format!(
                    " since {}",
                    when(t)
                )),
            when(k.created),
            k.ds_seen.map_or(String::new(), |(t, ttl)| format!(
                "  DS at the parent since {} (TTL {ttl})",
                when(t)
            )),
            if k.roll { "  rollover asked" } else { "" }
        );
    }
    println!("DNSKEY:");
    for k in keys.iter().filter(|k| k.is_published()) {
        println!(
            "{zone} IN DNSKEY {}",
            rdata_text(RType::DNSKEY, &k.dnskey_rdata())
        );
    }
    println!("DS (SHA-256), for the parent zone:");
    for k in keys.iter().filter(|k| k.is_ksk() && k.is_published()) {
        let ds = ds_rdata(zone, &k.dnskey_rdata(), k.algorithm);
        println!("{zone} IN DS {}", rdata_text(RType::DS, &ds));
    }
}
