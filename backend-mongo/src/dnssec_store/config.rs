//! A zone's DNSSEC settings: the `dnssec` section of its zone document
//! (secured or not, NSEC or NSEC3 and its parameters, CDS, the policy in
//! force, the parents asked for the DS, the signing service's marks).
//!
//! ```text
//!  zones { _id, …, dnssec: { secured, cds, marked, nsec3?: { iter, salt (hex), optout },
//!                            policy?: {…}, parents?: [addr], seen_gen? } }
//!     ── dnssec_config(zone) ──► DnssecConfig (a zone never secured: the default)
//!  DnssecConfig ── dnssec_field ──► the section a switch sets in its update
//!                                   (no seen_gen: a new version starts without it)
//! ```

use crate::policy::Policy;
use crate::store::{Store, StoreError};
use crate::Name;
use dns::encoding::{from_hex, to_hex};
use mongodb::bson::{doc, Bson, Document};

/// NSEC3 settings of a zone (RFC 5155; RFC 9276 recommends 0 iterations and
/// no salt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nsec3Config {
    /// Extra hash iterations.
    pub iterations: u16,
    /// Salt bytes (empty for none).
    pub salt: Vec<u8>,
    /// Opt-out: unsigned delegations stay out of the chain.
    pub opt_out: bool,
}

impl Nsec3Config {
    /// The stored form: `{iter, salt (hex), optout}`.
    pub fn to_doc(&self) -> Document {
        doc! {"iter": i32::from(self.iterations), "salt": to_hex(&self.salt), "optout": self.opt_out}
    }

    /// Reads the stored form (missing fields: 0, no salt, no opt-out).
    pub fn from_doc(n: &Document) -> Nsec3Config {
        Nsec3Config {
            iterations: n
                .get("iter")
                .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
                .unwrap_or(0) as u16,
            salt: n
                .get_str("salt")
                .ok()
                .and_then(from_hex)
                .unwrap_or_default(),
            opt_out: n.get_bool("optout").unwrap_or(false),
        }
    }
}

/// The `dnssec` section of a zone document.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DnssecConfig {
    /// True once a complete signed version of the zone has been published.
    pub secured: bool,
    /// NSEC3 settings; `None` means NSEC.
    pub nsec3: Option<Nsec3Config>,
    /// Publish CDS and CDNSKEY (RFC 7344) for the SEP keys.
    pub cds: bool,
    /// The key and signing policy in force (a copy of the named one), if
    /// the zone has one: the signing service keeps such a zone valid and
    /// rolls its keys.
    pub policy: Option<Policy>,
    /// The parent zone's servers (`ADDR:PORT`), asked for the DS during a
    /// KSK or CSK rollover.
    pub parents: Vec<String>,
    /// Every signed node carries its `sx` (earliest signature expiration),
    /// so refreshes read only what is due.
    pub marked: bool,
    /// The generation of the served version up to which the signing
    /// service has signed every writer's change (a process taking the zone
    /// over goes on from there). Not written by switches: a new version
    /// starts without it.
    pub seen_gen: Option<i64>,
}

impl Store {
    /// The zone's `dnssec` section (`None` for a zone never secured), or
    /// `NoSuchZone`.
    pub async fn dnssec_config(&self, zone: &Name) -> Result<DnssecConfig, StoreError> {
        let d = self
            .zones
            .find_one(doc! {"_id": zone.to_string()})
            .await?
            .filter(|d| d.contains_key("ver"))
            .ok_or_else(|| StoreError::NoSuchZone(zone.to_string()))?;
        let Ok(sec) = d.get_document("dnssec") else {
            return Ok(DnssecConfig::default());
        };
        let nsec3 = sec.get_document("nsec3").ok().map(Nsec3Config::from_doc);
        Ok(DnssecConfig {
            secured: sec.get_bool("secured").unwrap_or(false),
            nsec3,
            cds: sec.get_bool("cds").unwrap_or(false),
            policy: sec.get_document("policy").ok().map(Policy::from_doc),
            parents: sec
                .get_array("parents")
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            marked: sec.get_bool("marked").unwrap_or(false),
            seen_gen: sec.get("seen_gen").and_then(Bson::as_i64),
        })
    }

    /// The zone document's `dnssec` field for `config` (`Bson::Null`
    /// removes it), for writers that set it in the same update as a switch.
    pub fn dnssec_field(config: Option<&DnssecConfig>) -> Bson {
        match config {
            Some(c) => {
                let mut sec = doc! {"secured": c.secured, "cds": c.cds, "marked": c.marked};
                if let Some(n) = &c.nsec3 {
                    sec.insert("nsec3", n.to_doc());
                }
                if let Some(p) = &c.policy {
                    sec.insert("policy", p.to_doc());
                }
                if !c.parents.is_empty() {
                    sec.insert("parents", c.parents.clone());
                }
                Bson::Document(sec)
            }
            None => Bson::Null,
        }
    }
}
