//! The printers of the DNSSEC types whose layout is more than numbers and
//! data: RRSIG, NSEC, NSEC3, NSEC3PARAM, and CSYNC (a type bitmap too).
//!
//! ```text
//!  RRSIG  covered alg labels ttl YYYYMMDDHHmmSS YYYYMMDDHHmmSS tag signer base64
//!  NSEC   next TYPES...               CSYNC serial flags TYPES...
//!  NSEC3  alg flags iterations salt|- NEXTHASH(base32hex) TYPES...
//!  NSEC3PARAM alg flags iterations salt|-
//! ```

use crate::encoding::{base32hex, base64};
use crate::RType;

use super::fields::{hex, name_at, time_text, u16_at, u32_at, with_types};

/// An NSEC3 salt: `-` when empty.
fn salt_text(salt: &[u8]) -> String {
    match salt.is_empty() {
        true => "-".into(),
        false => hex(salt),
    }
}

/// RRSIG (RFC 4034 §3.2).
pub(super) fn rrsig(rd: &[u8]) -> Option<String> {
    if rd.len() <= 18 {
        return None;
    }
    let (signer, end) = name_at(rd, 18)?;
    Some(format!(
        "{} {} {} {} {} {} {} {signer} {}",
        RType(u16_at(rd, 0)?).mnemonic(),
        rd[2],
        rd[3],
        u32_at(rd, 4)?,
        time_text(u32_at(rd, 8)?),
        time_text(u32_at(rd, 12)?),
        u16_at(rd, 16)?,
        base64(rd.get(end..)?)
    ))
}

/// NSEC (RFC 4034 §4.2).
pub(super) fn nsec(rd: &[u8]) -> Option<String> {
    let (next, end) = name_at(rd, 0)?;
    Some(with_types(next, &rd[end..]))
}

/// NSEC3 (RFC 5155 §3.3).
pub(super) fn nsec3(rd: &[u8]) -> Option<String> {
    let salt_len = *rd.get(4)? as usize;
    let salt = rd.get(5..5 + salt_len)?;
    let hash_len = *rd.get(5 + salt_len)? as usize;
    let hash = rd.get(6 + salt_len..6 + salt_len + hash_len)?;
    let fields = format!(
        "{} {} {} {} {}",
        rd[0],
        rd[1],
        u16_at(rd, 2)?,
        salt_text(salt),
        base32hex(hash).to_uppercase()
    );
    Some(with_types(fields, &rd[6 + salt_len + hash_len..]))
}

/// NSEC3PARAM (RFC 5155 §4.3).
pub(super) fn nsec3param(rd: &[u8]) -> Option<String> {
    let salt = rd.get(5..5 + *rd.get(4)? as usize)?;
    Some(format!(
        "{} {} {} {}",
        rd[0],
        rd[1],
        u16_at(rd, 2)?,
        salt_text(salt)
    ))
}

/// CSYNC (RFC 7477): serial, flags, type bitmap.
pub(super) fn csync(rd: &[u8]) -> Option<String> {
    let (serial, flags) = (u32_at(rd, 0)?, u16_at(rd, 4)?);
    Some(with_types(format!("{serial} {flags}"), &rd[6..]))
}
