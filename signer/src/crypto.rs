//! Keys and signatures: generation with `ring`, RRSIG over canonical RRsets.
//!
//! ```text
//!  generate(alg, flags) ──ring (EC, Ed25519) / openssl genpkey (RSA)──► StoredKey (PKCS#8)
//!  SigningKey::load(StoredKey) ─► sign_rrset(owner, rrset, validity) ─► RRSIG rdata
//!      RRSIG fields ‖ canonical RRs (owner lower case, names in rdata lower
//!      case for the RFC 4034 §6.2 types, sorted by rdata, duplicates dropped)
//! ```

use backend_mongo::dnssec_store::{alg, KeyState, StoredKey};
use dns::dnssec::{dnskey_rdata, key_tag};
use dns::{Name, RType};
use mongodb::bson::DateTime;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair};

/// A key could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The algorithm is not one we sign with.
    #[error("algorithm {0} is not supported (use 8, 13 or 15)")]
    Unsupported(u8),
    /// The stored private key does not load.
    #[error("key {0}: the stored private key is not valid: {1}")]
    Rejected(String, String),
    /// Key generation failed.
    #[error("key generation failed: {0}")]
    Generate(String),
}

/// Parses an algorithm given by number or mnemonic.
pub fn parse_algorithm(text: &str) -> Option<u8> {
    match text.to_ascii_lowercase().as_str() {
        "13" | "ecdsap256sha256" | "ecdsa" => Some(alg::ECDSAP256SHA256),
        "15" | "ed25519" => Some(alg::ED25519),
        "8" | "rsasha256" | "rsa" => Some(alg::RSASHA256),
        _ => None,
    }
}

/// The mnemonic of an algorithm number.
pub fn algorithm_name(a: u8) -> &'static str {
    match a {
        alg::ECDSAP256SHA256 => "ECDSAP256SHA256",
        alg::ED25519 => "ED25519",
        alg::RSASHA256 => "RSASHA256",
        _ => "UNKNOWN",
    }
}

/// Makes a new key for `zone` (`flags` 257 for a KSK/CSK, 256 for a ZSK).
pub fn generate(
    zone: &Name,
    algorithm: u8,
    flags: u16,
    state: KeyState,
) -> Result<StoredKey, KeyError> {
    let rng = SystemRandom::new();
    let pkcs8: Vec<u8> = match algorithm {
        alg::ECDSAP256SHA256 => {
            EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .map_err(|_| KeyError::Generate("ECDSA".into()))?
                .as_ref()
                .to_vec()
        }
        alg::ED25519 => Ed25519KeyPair::generate_pkcs8(&rng)
            .map_err(|_| KeyError::Generate("Ed25519".into()))?
            .as_ref()
            .to_vec(),
        alg::RSASHA256 => generate_rsa()?,
        other => return Err(KeyError::Unsupported(other)),
    };
    let public_key = public_key_of(algorithm, &pkcs8)
        .map_err(|e| KeyError::Generate(format!("new key does not load: {e}")))?;
    let tag = key_tag(&dnskey_rdata(flags, algorithm, &public_key));
    let created = DateTime::now();
    Ok(StoredKey {
        id: format!("{zone} {tag} {}", created.timestamp_millis()),
        zone: zone.clone(),
        flags,
        algorithm,
        tag,
        public_key,
        private_pkcs8: pkcs8,
        state,
        created,
        since: Some(created),
        ds_seen: None,
        roll: false,
    })
}

/// ring cannot generate RSA keys: `openssl genpkey` makes a 2048-bit one
/// (PKCS#8 DER on stdout), which ring then loads and checks.
fn generate_rsa() -> Result<Vec<u8>, KeyError> {
    let out = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-outform",
            "DER",
        ])
        .output()
        .map_err(|e| KeyError::Generate(format!("RSA keys need the openssl command: {e}")))?;
    if !out.status.success() {
        return Err(KeyError::Generate(format!(
            "openssl genpkey failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

fn public_key_of(algorithm: u8, pkcs8: &[u8]) -> Result<Vec<u8>, String> {
    let rng = SystemRandom::new();
    Ok(match algorithm {
        alg::ECDSAP256SHA256 => {
            let kp =
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
                    .map_err(|e| e.to_string())?;
            // Uncompressed point 04 ‖ X ‖ Y; DNSKEY holds X ‖ Y (RFC 6605).
            kp.public_key().as_ref()[1..].to_vec()
        }
        alg::ED25519 => {
            let kp = Ed25519KeyPair::from_pkcs8(pkcs8).map_err(|e| e.to_string())?;
            kp.public_key().as_ref().to_vec()
        }
        alg::RSASHA256 => {
            let kp = RsaKeyPair::from_pkcs8(pkcs8).map_err(|e| e.to_string())?;
            let c = signature::RsaPublicKeyComponents::<Vec<u8>>::from(kp.public());
            // RFC 3110: exponent length, exponent, modulus.
            let mut out = Vec::with_capacity(3 + c.e.len() + c.n.len());
            if c.e.len() < 256 {
                out.push(c.e.len() as u8);
            } else {
                out.push(0);
                out.extend_from_slice(&(c.e.len() as u16).to_be_bytes());
            }
            out.extend_from_slice(&c.e);
            out.extend_from_slice(&c.n);
            out
        }
        other => return Err(format!("algorithm {other} is not supported")),
    })
}

enum Inner {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
    Rsa(RsaKeyPair),
}

/// A loaded private key, ready to sign from many threads.
pub struct SigningKey {
    inner: Inner,
    rng: SystemRandom,
    /// Its key tag.
    pub tag: u16,
    /// Its algorithm.
    pub algorithm: u8,
    /// The signer name (the zone apex).
    pub signer: Name,
}

impl SigningKey {
    /// Loads a stored key.
    pub fn load(key: &StoredKey) -> Result<SigningKey, KeyError> {
        let rng = SystemRandom::new();
        let reject = |e: String| KeyError::Rejected(key.id.clone(), e);
        let inner = match key.algorithm {
            alg::ECDSAP256SHA256 => Inner::Ecdsa(
                EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &key.private_pkcs8,
                    &rng,
                )
                .map_err(|e| reject(e.to_string()))?,
            ),
            alg::ED25519 => Inner::Ed25519(
                Ed25519KeyPair::from_pkcs8(&key.private_pkcs8)
                    .map_err(|e| reject(e.to_string()))?,
            ),
            alg::RSASHA256 => Inner::Rsa(
                RsaKeyPair::from_pkcs8(&key.private_pkcs8).map_err(|e| reject(e.to_string()))?,
            ),
            other => return Err(KeyError::Unsupported(other)),
        };
        Ok(SigningKey {
            inner,
            rng,
            tag: key.tag,
            algorithm: key.algorithm,
            signer: key.zone.clone(),
        })
    }

    fn sign_bytes(&self, data: &[u8]) -> Vec<u8> {
        match &self.inner {
            Inner::Ecdsa(k) => k
                .sign(&self.rng, data)
                .expect("ECDSA signing does not fail")
                .as_ref()
                .to_vec(),
            Inner::Ed25519(k) => k.sign(data).as_ref().to_vec(),
            Inner::Rsa(k) => {
                let mut sig = vec![0u8; k.public().modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &self.rng, data, &mut sig)
                    .expect("RSA signing does not fail");
                sig
            }
        }
    }

    /// The RRSIG rdata for `rdata` of `rtype` at `owner`, valid from
    /// `inception` to `expiration` (seconds since the epoch).
    pub fn sign_rrset(
        &self,
        owner: &Name,
        rtype: RType,
        ttl: u32,
        rdata: &[Box<[u8]>],
        inception: u32,
        expiration: u32,
    ) -> Vec<u8> {
        let labels = owner.label_count() - usize::from(owner.is_wildcard());
        let mut rd = Vec::with_capacity(18 + self.signer.wire_len() + 64);
        rd.extend_from_slice(&rtype.0.to_be_bytes());
        rd.push(self.algorithm);
        rd.push(labels as u8);
        rd.extend_from_slice(&ttl.to_be_bytes());
        rd.extend_from_slice(&expiration.to_be_bytes());
        rd.extend_from_slice(&inception.to_be_bytes());
        rd.extend_from_slice(&self.tag.to_be_bytes());
        rd.extend_from_slice(self.signer.as_wire());
        let mut data = rd.clone();
        let mut canonical: Vec<Vec<u8>> = rdata.iter().map(|r| canonical_rdata(rtype, r)).collect();
        canonical.sort_unstable();
        canonical.dedup();
        for c in &canonical {
            data.extend_from_slice(owner.as_wire());
            data.extend_from_slice(&rtype.0.to_be_bytes());
            data.extend_from_slice(&1u16.to_be_bytes());
            data.extend_from_slice(&ttl.to_be_bytes());
            data.extend_from_slice(&(c.len() as u16).to_be_bytes());
            data.extend_from_slice(c);
        }
        rd.extend_from_slice(&self.sign_bytes(&data));
        rd
    }
}

/// The canonical form of rdata (RFC 4034 §6.2 as amended by RFC 6840 §5.1):
/// the embedded names of the types whose descriptor says so (`dns::types`,
/// `canonical`) in lower case.
pub fn canonical_rdata(rtype: RType, rd: &[u8]) -> Vec<u8> {
    let mut out = rd.to_vec();
    if !rtype.info().is_some_and(|t| t.canonical) {
        return out;
    }
    for (at, len) in dns::rdata::names_in(rtype, rd).map_while(Result::ok) {
        out[at..at + len].make_ascii_lowercase();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_rdata_lowercases_names_of_listed_types_only() {
        let mx = b"\x00\x0a\x04MAIL\x07Example\x00";
        assert_eq!(
            canonical_rdata(RType::MX, mx),
            b"\x00\x0a\x04mail\x07example\x00"
        );
        let txt = b"\x04MAIL";
        assert_eq!(canonical_rdata(RType::TXT, txt), txt.to_vec());
        // NXT (RFC 4034 §6.2) lower-cased; LP (not listed) kept.
        assert_eq!(
            canonical_rdata(RType(30), b"\x01A\x00\x40"),
            b"\x01a\x00\x40"
        );
        let lp = b"\x00\x0a\x01A\x00";
        assert_eq!(canonical_rdata(RType(107), lp), lp.to_vec());
        let srv = b"\x00\x01\x00\x02\x00\x03\x03SIP\x00";
        assert_eq!(
            canonical_rdata(RType::SRV, srv),
            b"\x00\x01\x00\x02\x00\x03\x03sip\x00"
        );
    }

    #[test]
    fn generated_keys_have_consistent_tags_and_sign() {
        let zone: Name = "example.".parse().unwrap();
        for a in [alg::ECDSAP256SHA256, alg::ED25519] {
            let key = generate(&zone, a, 257, KeyState::Active).unwrap();
            assert_eq!(key.tag, key_tag(&key.dnskey_rdata()));
            let signer = SigningKey::load(&key).unwrap();
            let rd = signer.sign_rrset(
                &"www.example.".parse().unwrap(),
                RType::A,
                300,
                &[Box::new([192, 0, 2, 1])],
                1,
                2,
            );
            assert_eq!(&rd[..4], &[0, 1, a, 2]);
            assert_eq!(rd.len(), 18 + zone.wire_len() + 64);
        }
    }
}
