//! DNSSEC keys as stored: one document per key in the `keys` collection,
//! its life cycle state, and the reads and writes of them (the signing
//! service's whole-key replace is `signing.rs`).
//!
//! ```text
//!  StoredKey ──key_doc──► keys { _id: "<zone> <tag> <created ms>", zone, flags, alg,
//!           ◄─key_from_doc─      tag, pub, priv, state, created, since, ds_seen, ds_ttl, roll }
//!  zone_keys(zone) ── keys {zone} (index `zone`) ──► oldest first
//!  insert_keys(keys) ── one insert_many: a zone's first KSK and ZSK both or neither
//!  set_key_state(id, state), delete_key(id) ── keys {_id}
//! ```

use crate::schema::{self, binary};
use crate::store::{Store, StoreError};
use crate::Name;
use dns::dnssec::dnskey_rdata;
use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use std::fmt;

/// Collection of DNSSEC keys.
pub const KEYS: &str = "keys";

/// Algorithm numbers we sign with (RFC 8624).
pub mod alg {
    /// RSA/SHA-256 (8).
    pub const RSASHA256: u8 = 8;
    /// ECDSA P-256 with SHA-256 (13).
    pub const ECDSAP256SHA256: u8 = 13;
    /// Ed25519 (15).
    pub const ED25519: u8 = 15;
}

/// Life cycle of a key (RFC 7583 terms, simplified).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyState {
    /// In the DNSKEY RRset, not signing (pre-publication of a new key, or a
    /// KSK waiting for its DS).
    Published,
    /// In the DNSKEY RRset and signing.
    Active,
    /// In the DNSKEY RRset, no longer signing (post-publication), until removed.
    Retired,
    /// Signing, not in the DNSKEY RRset: an algorithm rollover's new keys
    /// before they are published, and its old keys after they are
    /// withdrawn (RFC 6781 §4.1.4).
    Signing,
}

impl KeyState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::Published => "published",
            KeyState::Active => "active",
            KeyState::Retired => "retired",
            KeyState::Signing => "signing",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(text: &str) -> Option<KeyState> {
        match text {
            "published" => Some(KeyState::Published),
            "active" => Some(KeyState::Active),
            "retired" => Some(KeyState::Retired),
            "signing" => Some(KeyState::Signing),
            _ => None,
        }
    }
}

/// A DNSSEC key as stored. The private key never leaves this value through
/// `Debug` or `Display`.
#[derive(Clone)]
pub struct StoredKey {
    /// `_id`: `"<zone> <tag> <created millis>"`.
    pub id: String,
    /// The zone it signs.
    pub zone: Name,
    /// DNSKEY flags: 257 (SEP, a KSK or CSK) or 256 (ZSK).
    pub flags: u16,
    /// DNSKEY algorithm number.
    pub algorithm: u8,
    /// Key tag (RFC 4034 Appendix B).
    pub tag: u16,
    /// The DNSKEY public key field.
    pub public_key: Vec<u8>,
    /// The private key, PKCS#8 DER.
    pub private_pkcs8: Vec<u8>,
    /// Its state.
    pub state: KeyState,
    /// When it was made.
    pub created: DateTime,
    /// When its current state took effect (the zone re-signed with it);
    /// `None` while that is still to be done.
    pub since: Option<DateTime>,
    /// When the parent was first seen serving its DS (or the operator said
    /// it was submitted), and the DS TTL then.
    pub ds_seen: Option<(DateTime, u32)>,
    /// A rollover of this key was asked for (`mongodns-sign rollover`).
    pub roll: bool,
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredKey")
            .field("id", &self.id)
            .field("zone", &self.zone)
            .field("flags", &self.flags)
            .field("algorithm", &self.algorithm)
            .field("tag", &self.tag)
            .field("state", &self.state)
            .field("private_pkcs8", &"<redacted>")
            .finish()
    }
}

impl StoredKey {
    /// The DNSKEY rdata: flags, protocol 3, algorithm, public key.
    pub fn dnskey_rdata(&self) -> Vec<u8> {
        dnskey_rdata(self.flags, self.algorithm, &self.public_key)
    }

    /// True when the key is in the DNSKEY RRset.
    pub fn is_published(&self) -> bool {
        self.state != KeyState::Signing
    }

    /// True for a key with the SEP bit (KSK or CSK).
    pub fn is_ksk(&self) -> bool {
        self.flags & 1 == 1
    }

    /// "KSK"/"ZSK" for people.
    pub fn role(&self) -> &'static str {
        if self.is_ksk() {
            "KSK"
        } else {
            "ZSK"
        }
    }
}

impl Store {
    /// Every key of `zone`, oldest first.
    pub async fn zone_keys(&self, zone: &Name) -> Result<Vec<StoredKey>, StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        let mut cursor = keys.find(doc! {"zone": zone.to_string()}).await?;
        let mut out = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            out.push(key_from_doc(&d)?);
        }
        out.sort_by_key(|k| (k.created, k.id.clone()));
        Ok(out)
    }

    /// Stores a new key.
    pub async fn insert_key(&self, key: &StoredKey) -> Result<(), StoreError> {
        self.insert_keys(std::slice::from_ref(key)).await
    }

    /// Stores several new keys in one command: a writer killed while
    /// storing a zone's first KSK and ZSK leaves both or neither, never a
    /// KSK alone that a re-run would take for a CSK.
    pub async fn insert_keys(&self, new: &[StoredKey]) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.insert_many(new.iter().map(key_doc)).await?;
        Ok(())
    }

    /// Changes a key's state.
    pub async fn set_key_state(&self, id: &str, state: KeyState) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.update_one(doc! {"_id": id}, doc! {"$set": {"state": state.as_str()}})
            .await?;
        Ok(())
    }

    /// Deletes a key.
    pub async fn delete_key(&self, id: &str) -> Result<(), StoreError> {
        let keys = self.db.collection::<Document>(KEYS);
        keys.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }
}

/// The stored document of `key`.
pub(crate) fn key_doc(key: &StoredKey) -> Document {
    doc! {
        "_id": &key.id,
        "zone": key.zone.to_string(),
        "flags": i32::from(key.flags),
        "alg": i32::from(key.algorithm),
        "tag": i32::from(key.tag),
        "pub": binary(&key.public_key),
        "priv": binary(&key.private_pkcs8),
        "state": key.state.as_str(),
        "created": key.created,
        "since": key.since.map_or(Bson::Null, Bson::DateTime),
        "ds_seen": key.ds_seen.map_or(Bson::Null, |(at, _)| Bson::DateTime(at)),
        "ds_ttl": key.ds_seen.map_or(Bson::Null, |(_, ttl)| Bson::Int64(i64::from(ttl))),
        "roll": key.roll,
    }
}

fn key_from_doc(d: &Document) -> Result<StoredKey, StoreError> {
    let id = d.get_str("_id").unwrap_or("?").to_string();
    let bad = |reason: &str| {
        StoreError::Schema(schema::SchemaError {
            id: id.clone(),
            reason: reason.to_string(),
        })
    };
    let int = |k: &str| {
        d.get(k)
            .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
            .ok_or_else(|| bad(&format!("missing {k}")))
    };
    let bin = |k: &str| match d.get(k) {
        Some(Bson::Binary(b)) => Ok(b.bytes.clone()),
        _ => Err(bad(&format!("missing {k}"))),
    };
    Ok(StoredKey {
        zone: d
            .get_str("zone")
            .map_err(|_| bad("missing zone"))?
            .parse()
            .map_err(|_| bad("bad zone"))?,
        flags: int("flags")? as u16,
        algorithm: int("alg")? as u8,
        tag: int("tag")? as u16,
        public_key: bin("pub")?,
        private_pkcs8: bin("priv")?,
        state: d
            .get_str("state")
            .ok()
            .and_then(KeyState::parse)
            .ok_or_else(|| bad("bad state"))?,
        created: d.get_datetime("created").copied().unwrap_or(DateTime::MIN),
        // Keys stored before the signing service took effect when made.
        since: match d.get("since") {
            Some(Bson::DateTime(t)) => Some(*t),
            Some(Bson::Null) => None,
            _ => d.get_datetime("created").ok().copied(),
        },
        ds_seen: d.get_datetime("ds_seen").ok().map(|t| {
            let ttl = d
                .get("ds_ttl")
                .and_then(|v| v.as_i64().or(v.as_i32().map(i64::from)))
                .unwrap_or(0);
            (*t, ttl.clamp(0, i64::from(u32::MAX)) as u32)
        }),
        roll: d.get_bool("roll").unwrap_or(false),
        id: id.clone(),
    })
}
