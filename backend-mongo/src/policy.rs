//! Key and signing policies (KASP): named settings stored in the database,
//! a copy of the one in force kept in each zone's `dnssec` section so that
//! every signing writer reads it with the zone.
//!
//! ```text
//!  policies { _id: NAME, alg, csk, ksk_life, zsk_life, sig_life, sig_refresh,
//!             sig_jitter, dnskey_ttl, propagation, max_ttl, ds_ttl,
//!             ds_check, cds, nsec3?: { iter, salt, optout } }
//!  zones    { …, dnssec: { …, policy: { name, …the same fields } } }
//!
//!  set-policy ─► put_policy / policy(name) ─► zone's dnssec.policy (a copy)
//!  signers ─► dnssec_config(zone).policy ─► validity, DNSKEY TTL, rollovers
//! ```
//!
//! Every duration is whole seconds. A lifetime of 0 means "never rolled
//! automatically" (a manual `rollover` still rolls the key).

use crate::dnssec_store::Nsec3Config;
use crate::store::{Store, StoreError};
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

/// Collection of named policies.
pub const POLICIES: &str = "policies";

/// The name of the built-in policy (used when no document of that name
/// is stored).
pub const DEFAULT_POLICY: &str = "default";

const DAY: u64 = 86_400;

/// One key and signing policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Its name.
    pub name: String,
    /// DNSKEY algorithm of new keys; a zone whose keys use another one is
    /// moved to this one by an algorithm rollover.
    pub algorithm: u8,
    /// One combined signing key (CSK) instead of a KSK and a ZSK.
    pub csk: bool,
    /// KSK (or CSK) lifetime; 0: rolled only when asked.
    pub ksk_lifetime: u64,
    /// ZSK lifetime; 0: rolled only when asked.
    pub zsk_lifetime: u64,
    /// How long new signatures are valid.
    pub rrsig_lifetime: u64,
    /// Signatures with less than this left are replaced.
    pub rrsig_refresh: u64,
    /// Up to this much is taken off each new signature's validity, so
    /// that refreshes spread out over time.
    pub rrsig_jitter: u64,
    /// TTL of the DNSKEY, CDS and CDNSKEY RRsets.
    pub dnskey_ttl: u32,
    /// Time for a change to reach every secondary (and so every cache's
    /// source).
    pub propagation_delay: u64,
    /// The largest TTL in the zone (old signatures leave caches after it).
    pub zone_max_ttl: u64,
    /// The parent's DS TTL assumed when it cannot be asked (a manual
    /// `ksk-submitted`); an answer from the parent gives the real one.
    pub ds_ttl: u64,
    /// How often the parent's servers are asked for the DS while a
    /// rollover waits for it.
    pub ds_check_interval: u64,
    /// Publish CDS and CDNSKEY (RFC 7344) for the keys the parent should
    /// have.
    pub cds: bool,
    /// NSEC3 settings; `None` for NSEC.
    pub nsec3: Option<Nsec3Config>,
}

impl Policy {
    /// The built-in defaults under `name`: a KSK and a ZSK of algorithm
    /// 13, NSEC, signatures of 30 days refreshed with 10 days left (up to
    /// 3 days of jitter), the ZSK rolled every 90 days, the KSK when asked,
    /// CDS/CDNSKEY published.
    pub fn defaults(name: &str) -> Policy {
        Policy {
            name: name.to_string(),
            algorithm: crate::dnssec_store::alg::ECDSAP256SHA256,
            csk: false,
            ksk_lifetime: 0,
            zsk_lifetime: 90 * DAY,
            rrsig_lifetime: 30 * DAY,
            rrsig_refresh: 10 * DAY,
            rrsig_jitter: 3 * DAY,
            dnskey_ttl: 3600,
            propagation_delay: 3600,
            zone_max_ttl: DAY,
            ds_ttl: DAY,
            ds_check_interval: 600,
            cds: true,
            nsec3: None,
        }
    }

    /// Checks that the settings can work together; the reason otherwise.
    pub fn check(&self) -> Result<(), String> {
        if self.rrsig_lifetime == 0 || self.rrsig_refresh == 0 {
            return Err("the signature lifetime and refresh must be above 0".into());
        }
        if self.rrsig_refresh + self.rrsig_jitter >= self.rrsig_lifetime {
            return Err(format!(
                "signature refresh ({} s) plus jitter ({} s) must be below the lifetime ({} s), \
                 or new signatures would be due at once",
                self.rrsig_refresh, self.rrsig_jitter, self.rrsig_lifetime
            ));
        }
        let roll_wait = self.zone_max_ttl + self.propagation_delay;
        for (what, life) in [("ZSK", self.zsk_lifetime), ("KSK", self.ksk_lifetime)] {
            if life != 0 && life <= roll_wait {
                return Err(format!(
                    "a {what} lifetime of {life} s does not leave room for a rollover \
                     (the zone's maximum TTL plus the propagation delay is {roll_wait} s)"
                ));
            }
        }
        Ok(())
    }

    /// The stored form (also the zone's `dnssec.policy` copy).
    pub fn to_doc(&self) -> Document {
        let secs = |v: u64| Bson::Int64(v.min(i64::MAX as u64) as i64);
        let mut d = doc! {
            "name": &self.name,
            "alg": i32::from(self.algorithm),
            "csk": self.csk,
            "ksk_life": secs(self.ksk_lifetime),
            "zsk_life": secs(self.zsk_lifetime),
            "sig_life": secs(self.rrsig_lifetime),
            "sig_refresh": secs(self.rrsig_refresh),
            "sig_jitter": secs(self.rrsig_jitter),
            "dnskey_ttl": i64::from(self.dnskey_ttl),
            "propagation": secs(self.propagation_delay),
            "max_ttl": secs(self.zone_max_ttl),
            "ds_ttl": secs(self.ds_ttl),
            "ds_check": secs(self.ds_check_interval),
            "cds": self.cds,
        };
        if let Some(n) = &self.nsec3 {
            d.insert("nsec3", n.to_doc());
        }
        d
    }

    /// Reads the stored form; fields missing take the defaults.
    pub fn from_doc(d: &Document) -> Policy {
        let name = d
            .get_str("name")
            .or_else(|_| d.get_str("_id"))
            .unwrap_or(DEFAULT_POLICY);
        let base = Policy::defaults(name);
        let int = |k: &str| {
            d.get(k)
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .map(|v| v.max(0) as u64)
        };
        let nsec3 = d.get_document("nsec3").ok().map(Nsec3Config::from_doc);
        Policy {
            name: name.to_string(),
            algorithm: int("alg").map_or(base.algorithm, |v| v as u8),
            csk: d.get_bool("csk").unwrap_or(base.csk),
            ksk_lifetime: int("ksk_life").unwrap_or(base.ksk_lifetime),
            zsk_lifetime: int("zsk_life").unwrap_or(base.zsk_lifetime),
            rrsig_lifetime: int("sig_life").unwrap_or(base.rrsig_lifetime),
            rrsig_refresh: int("sig_refresh").unwrap_or(base.rrsig_refresh),
            rrsig_jitter: int("sig_jitter").unwrap_or(base.rrsig_jitter),
            dnskey_ttl: int("dnskey_ttl").map_or(base.dnskey_ttl, |v| v as u32),
            propagation_delay: int("propagation").unwrap_or(base.propagation_delay),
            zone_max_ttl: int("max_ttl").unwrap_or(base.zone_max_ttl),
            ds_ttl: int("ds_ttl").unwrap_or(base.ds_ttl),
            ds_check_interval: int("ds_check").unwrap_or(base.ds_check_interval),
            cds: d.get_bool("cds").unwrap_or(base.cds),
            nsec3,
        }
    }
}

impl Store {
    /// Stores (or replaces) a named policy.
    pub async fn put_policy(&self, policy: &Policy) -> Result<(), StoreError> {
        let coll = self.db.collection::<Document>(POLICIES);
        coll.replace_one(doc! {"_id": &policy.name}, policy.to_doc())
            .upsert(true)
            .await?;
        Ok(())
    }

    /// The named policy: the stored one, else the built-in defaults for
    /// [`DEFAULT_POLICY`], else `None`.
    pub async fn policy(&self, name: &str) -> Result<Option<Policy>, StoreError> {
        let coll = self.db.collection::<Document>(POLICIES);
        match coll.find_one(doc! {"_id": name}).await? {
            Some(d) => Ok(Some(Policy::from_doc(&d))),
            None if name == DEFAULT_POLICY => Ok(Some(Policy::defaults(name))),
            None => Ok(None),
        }
    }

    /// Every stored policy, by name.
    pub async fn policies(&self) -> Result<Vec<Policy>, StoreError> {
        let coll = self.db.collection::<Document>(POLICIES);
        let mut cursor = coll.find(doc! {}).await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(Policy::from_doc(&d));
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_round_trips_through_its_document() {
        let mut p = Policy::defaults("short");
        p.csk = true;
        p.zsk_lifetime = 120;
        p.nsec3 = Some(Nsec3Config {
            iterations: 0,
            salt: vec![0xab],
            opt_out: true,
        });
        assert_eq!(Policy::from_doc(&p.to_doc()), p);
        assert_eq!(Policy::from_doc(&doc! {"_id": "x"}), Policy::defaults("x"));
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        assert!(Policy::defaults("d").check().is_ok());
        let mut p = Policy::defaults("d");
        p.rrsig_refresh = p.rrsig_lifetime;
        assert!(p.check().unwrap_err().contains("below the lifetime"));
        let mut p = Policy::defaults("d");
        p.zsk_lifetime = 60;
        assert!(p.check().unwrap_err().contains("ZSK lifetime"));
    }
}
