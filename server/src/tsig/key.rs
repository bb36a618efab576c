//! TSIG keys: algorithm, secret, and where each may be used.
//!
//! ```text
//!  "ALG:NAME:BASE64SECRET [zones=Z1,Z2] [from=NET1,NET2]"
//!     ALG: hmac-sha256 | hmac-sha384 | hmac-sha512 (NAME:SECRET alone: sha256)
//!     zones=  the key is known only for these zones and names below them
//!     from=   and only from these address blocks (zone transfers; ordinary
//!             queries do not carry the client address this far, so such a
//!             key is not accepted for them)
//!     update  it may change its zones by DNS UPDATE: only with zones=
//!  elsewhere the key is unknown: NOTAUTH, TSIG error BADKEY (RFC 8945 §5.2)
//! ```

use crate::cidr::Cidr;
use dns::Name;
use ring::hmac;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An HMAC algorithm of RFC 8945 §6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// hmac-sha256 (mandatory to implement).
    Sha256,
    /// hmac-sha384.
    Sha384,
    /// hmac-sha512.
    Sha512,
}

impl Algorithm {
    /// The algorithm's name as written in keys (and, with a root label, on
    /// the wire).
    pub fn label(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "hmac-sha256",
            Algorithm::Sha384 => "hmac-sha384",
            Algorithm::Sha512 => "hmac-sha512",
        }
    }

    /// The algorithm's domain name, as in the TSIG record.
    pub fn name(self) -> Name {
        Name::parse(self.label(), Some(&Name::root())).expect("a valid name")
    }

    /// The full MAC length in bytes.
    pub fn mac_len(self) -> usize {
        match self {
            Algorithm::Sha256 => 32,
            Algorithm::Sha384 => 48,
            Algorithm::Sha512 => 64,
        }
    }

    /// The shortest truncated MAC RFC 8945 §5.2.2.1 allows: the larger of
    /// 10 bytes and half the hash.
    pub fn min_mac_len(self) -> usize {
        (self.mac_len() / 2).max(10)
    }

    fn ring(self) -> hmac::Algorithm {
        match self {
            Algorithm::Sha256 => hmac::HMAC_SHA256,
            Algorithm::Sha384 => hmac::HMAC_SHA384,
            Algorithm::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn from_label(text: &str) -> Option<Algorithm> {
        [Algorithm::Sha256, Algorithm::Sha384, Algorithm::Sha512]
            .into_iter()
            .find(|a| a.label().eq_ignore_ascii_case(text))
    }
}

/// Where a request is being judged: the name it asks for and, when known,
/// the client's address.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The question name.
    pub qname: Option<&'a Name>,
    /// The client, if the path knows it (zone transfers).
    pub peer: Option<IpAddr>,
}

impl Scope<'_> {
    /// No question and no address: only unscoped keys apply.
    pub const NONE: Scope<'static> = Scope {
        qname: None,
        peer: None,
    };
}

/// A shared secret, its algorithm and where it may be used.
#[derive(Clone)]
pub struct TsigKey {
    /// The key's name (lower-cased wire form inside).
    pub name: Name,
    /// Its algorithm.
    pub algorithm: Algorithm,
    pub(super) key: hmac::Key,
    /// Zones the key is known for (empty: every zone).
    pub zones: Vec<Name>,
    /// Address blocks the key may be used from (empty: anywhere).
    pub from: Vec<Cidr>,
    /// It may change records of its zones by DNS UPDATE (`update`).
    pub update: bool,
}

impl fmt::Debug for TsigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TsigKey({} {}, secret hidden)",
            self.name,
            self.algorithm.label()
        )
    }
}

impl TsigKey {
    /// True if the key may be used for `scope`.
    pub fn allows(&self, scope: &Scope) -> bool {
        let zone_ok = self.zones.is_empty()
            || scope
                .qname
                .is_some_and(|q| self.zones.iter().any(|z| q.is_subdomain_of(z)));
        let from_ok = self.from.is_empty()
            || scope
                .peer
                .is_some_and(|ip| self.from.iter().any(|c| c.contains(ip)));
        zone_ok && from_ok
    }

    /// The key as configured, with the secret replaced by `<secret>`.
    pub fn redacted(&self) -> String {
        let mut text = format!("{}:{}:<secret>", self.algorithm.label(), self.name);
        if !self.zones.is_empty() {
            let zones: Vec<String> = self.zones.iter().map(Name::to_string).collect();
            text.push_str(&format!(" zones={}", zones.join(",")));
        }
        if !self.from.is_empty() {
            let from: Vec<String> = self.from.iter().map(Cidr::to_string).collect();
            text.push_str(&format!(" from={}", from.join(",")));
        }
        if self.update {
            text.push_str(" update");
        }
        text
    }
}

impl FromStr for TsigKey {
    type Err = String;

    /// `ALG:NAME:BASE64SECRET` (kdig's `-y` syntax) or `NAME:SECRET`, then
    /// optional `zones=…`, `from=…` and `update` (the key may send DNS
    /// UPDATE for its zones; refused without `zones=`), separated by spaces.
    fn from_str(text: &str) -> Result<TsigKey, String> {
        let mut words = text.split_whitespace();
        let spec = words.next().unwrap_or("");
        let parts: Vec<&str> = spec.split(':').collect();
        let (alg, name, secret) = match parts.as_slice() {
            [alg, name, secret] => (*alg, *name, *secret),
            [name, secret] => ("hmac-sha256", *name, *secret),
            _ => return Err("a TSIG key is ALGORITHM:NAME:BASE64SECRET".into()),
        };
        let algorithm = Algorithm::from_label(alg).ok_or_else(|| {
            format!("TSIG algorithm {alg} is not supported (hmac-sha256, hmac-sha384, hmac-sha512)")
        })?;
        let name = Name::parse(name, Some(&Name::root()))
            .map_err(|e| format!("TSIG key name {name}: {e}"))?;
        let secret = dns::encoding::from_base64(secret)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("TSIG key {name}: the secret is not base64"))?;
        let mut key = TsigKey {
            name,
            algorithm,
            key: hmac::Key::new(algorithm.ring(), &secret),
            zones: Vec::new(),
            from: Vec::new(),
            update: false,
        };
        for word in words {
            key.add_scope(word)?;
        }
        if key.update && key.zones.is_empty() {
            return Err(format!(
                "TSIG key {}: update needs zones= (the zones it may change)",
                key.name
            ));
        }
        Ok(key)
    }
}

impl TsigKey {
    fn add_scope(&mut self, word: &str) -> Result<(), String> {
        let bad = |e: String| format!("TSIG key {}: {e}", self.name);
        if word == "update" {
            self.update = true;
            return Ok(());
        }
        match word.split_once('=') {
            Some(("zones", list)) => {
                for z in list.split(',').filter(|z| !z.is_empty()) {
                    let zone = Name::parse(z, Some(&Name::root()))
                        .map_err(|e| bad(format!("zone {z}: {e}")))?;
                    self.zones.push(zone);
                }
                Ok(())
            }
            Some(("from", list)) => {
                for n in list.split(',').filter(|n| !n.is_empty()) {
                    self.from.push(n.parse().map_err(bad)?);
                }
                Ok(())
            }
            _ => Err(bad(format!(
                "unknown option {word:?} (zones=Z1,Z2, from=NET1,NET2 or update)"
            ))),
        }
    }
}

/// Reads keys from a file: one key a line (as for `--tsig-key`), `#`
/// comments and blank lines ignored. Errors name the line, never the secret.
pub fn read_key_file(path: &std::path::Path) -> Result<Vec<TsigKey>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let key = line
            .parse::<TsigKey>()
            .map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        keys.push(key);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_with_algorithms_and_scopes() {
        let k: TsigKey =
            "hmac-sha512:k:aGVsbG8= zones=a.test.,b.test from=192.0.2.0/24,2001:db8::/32"
                .parse()
                .unwrap();
        assert_eq!(k.algorithm, Algorithm::Sha512);
        assert_eq!(k.zones.len(), 2);
        assert_eq!(k.from.len(), 2);
        assert_eq!(
            k.redacted(),
            "hmac-sha512:k.:<secret> zones=a.test.,b.test. from=192.0.2.0/24,2001:db8::/32"
        );
        let www: Name = "www.a.test.".parse().unwrap();
        let other: Name = "www.c.test.".parse().unwrap();
        let inside = Some("192.0.2.9".parse().unwrap());
        let outside = Some("198.51.100.1".parse().unwrap());
        assert!(k.allows(&Scope {
            qname: Some(&www),
            peer: inside
        }));
        assert!(!k.allows(&Scope {
            qname: Some(&other),
            peer: inside
        }));
        assert!(!k.allows(&Scope {
            qname: Some(&www),
            peer: outside
        }));
        assert!(!k.allows(&Scope {
            qname: Some(&www),
            peer: None
        }));
        assert!("hmac-sha384:k:aGVsbG8="
            .parse::<TsigKey>()
            .unwrap()
            .allows(&Scope::NONE));
        assert!("hmac-md5:k:aGVsbG8=".parse::<TsigKey>().is_err());
        assert!("k:aGVsbG8= zone=a.test".parse::<TsigKey>().is_err());
        assert!("k:aGVsbG8= from=10.0.0.0/33".parse::<TsigKey>().is_err());
    }

    #[test]
    fn a_key_may_update_only_the_zones_it_names() {
        let unscoped = "k:aGVsbG8= update".parse::<TsigKey>();
        let why = unscoped.expect_err("update without zones= is refused");
        assert!(why.contains("zones="), "{why}");
        assert!("k:aGVsbG8= from=10.0.0.0/8 update"
            .parse::<TsigKey>()
            .is_err());
        let k: TsigKey = "k:aGVsbG8= update zones=a.test.".parse().unwrap();
        assert!(k.update && k.zones.len() == 1);
        // A key for transfers and queries may still be unscoped.
        assert!("k:aGVsbG8=".parse::<TsigKey>().unwrap().zones.is_empty());
    }
}
