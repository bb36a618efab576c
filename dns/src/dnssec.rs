//! DNSSEC wire maths: the computations both the signer and the server need,
//! on wire-format rdata, with no storage.
//!
//! ```text
//!  DNSKEY fields ──dnskey_rdata──► rdata ──key_tag──► u16 (RFC 4034 App. B)
//!  owner + DNSKEY rdata ──ds_rdata──► DS rdata (SHA-256, digest type 2)
//!  Name + salt + iterations ──nsec3_hash──► 20 bytes (RFC 5155 §5)
//!  [RType] ◄──type_bitmap / bitmap_types──► NSEC/NSEC3 bitmap field
//!  TTL + rdata ──rrset_digest──► i64   (what a signature was made over)
//!  RRSIG rdata ──rrsig_expiration / rrsig_key_tag──► fields
//! ```

use crate::{Name, RType};

/// DNSKEY rdata from its fields.
pub fn dnskey_rdata(flags: u16, algorithm: u8, public_key: &[u8]) -> Vec<u8> {
    let mut rd = Vec::with_capacity(4 + public_key.len());
    rd.extend_from_slice(&flags.to_be_bytes());
    rd.push(3);
    rd.push(algorithm);
    rd.extend_from_slice(public_key);
    rd
}

/// The key tag of a DNSKEY rdata (RFC 4034 Appendix B).
pub fn key_tag(rdata: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for (i, b) in rdata.iter().enumerate() {
        acc += if i & 1 == 0 {
            u32::from(*b) << 8
        } else {
            u32::from(*b)
        };
    }
    acc += (acc >> 16) & 0xFFFF;
    (acc & 0xFFFF) as u16
}

/// DS rdata with a SHA-256 digest (digest type 2) for `owner`'s DNSKEY.
pub fn ds_rdata(owner: &Name, dnskey: &[u8], algorithm: u8) -> Vec<u8> {
    let mut data = owner.as_wire().to_vec();
    data.extend_from_slice(dnskey);
    let digest = ring::digest::digest(&ring::digest::SHA256, &data);
    let mut rd = Vec::with_capacity(4 + 32);
    rd.extend_from_slice(&key_tag(dnskey).to_be_bytes());
    rd.push(algorithm);
    rd.push(2);
    rd.extend_from_slice(digest.as_ref());
    rd
}

/// The NSEC3 owner hash (RFC 5155 §5): SHA-1 of the wire name, iterated.
pub fn nsec3_hash(name: &Name, salt: &[u8], iterations: u16) -> [u8; 20] {
    use ring::digest::{digest, SHA1_FOR_LEGACY_USE_ONLY as SHA1};
    let mut buf = Vec::with_capacity(name.wire_len() + salt.len());
    buf.extend_from_slice(name.as_wire());
    buf.extend_from_slice(salt);
    let mut h = digest(&SHA1, &buf);
    for _ in 0..iterations {
        buf.clear();
        buf.extend_from_slice(h.as_ref());
        buf.extend_from_slice(salt);
        h = digest(&SHA1, &buf);
    }
    let mut out = [0u8; 20];
    out.copy_from_slice(h.as_ref());
    out
}

/// The type bitmap field of NSEC/NSEC3 (RFC 4034 §4.1.2) for `types`.
pub fn type_bitmap(types: &[RType]) -> Vec<u8> {
    let mut sorted: Vec<u16> = types.iter().map(|t| t.0).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let window = (sorted[i] >> 8) as u8;
        let mut bits = [0u8; 32];
        let mut len = 0;
        while i < sorted.len() && (sorted[i] >> 8) as u8 == window {
            let low = (sorted[i] & 0xFF) as usize;
            bits[low / 8] |= 0x80 >> (low % 8);
            len = low / 8 + 1;
            i += 1;
        }
        out.push(window);
        out.push(len as u8);
        out.extend_from_slice(&bits[..len]);
    }
    out
}

/// The types listed in a type bitmap field.
pub fn bitmap_types(mut bitmap: &[u8]) -> Vec<RType> {
    let mut out = Vec::new();
    while bitmap.len() >= 2 {
        let window = u16::from(bitmap[0]);
        let len = bitmap[1] as usize;
        let Some(bits) = bitmap.get(2..2 + len) else {
            break;
        };
        for (byte, b) in bits.iter().enumerate() {
            for bit in 0..8 {
                if b & (0x80 >> bit) != 0 {
                    out.push(RType((window << 8) | (byte * 8 + bit) as u16));
                }
            }
        }
        bitmap = &bitmap[2 + len..];
    }
    out
}

/// A short digest of an RRset's content (TTL and sorted rdata), stored next
/// to its signatures as `sd`. A signer compares it with the current content
/// to find RRsets changed by any writer since they were signed.
pub fn rrset_digest(ttl: u32, rdata: &[Box<[u8]>]) -> i64 {
    let mut sorted: Vec<&[u8]> = rdata.iter().map(|r| &r[..]).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(&ttl.to_be_bytes());
    for rd in sorted {
        ctx.update(&(rd.len() as u16).to_be_bytes());
        ctx.update(rd);
    }
    let d = ctx.finish();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d.as_ref()[..8]);
    i64::from_be_bytes(b)
}

/// The expiration time (seconds since the epoch, RFC 1982 wrap ignored) of
/// an RRSIG rdata.
pub fn rrsig_expiration(rd: &[u8]) -> Option<u32> {
    let b = rd.get(8..12)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The key tag field of an RRSIG rdata.
pub fn rrsig_key_tag(rd: &[u8]) -> Option<u16> {
    let b = rd.get(16..18)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::base32hex;

    #[test]
    fn nsec3_hash_matches_rfc5155_appendix_a() {
        // RFC 5155 Appendix A: salt aabbccdd, 12 iterations.
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        let h = nsec3_hash(&"example.".parse().unwrap(), &salt, 12);
        assert_eq!(base32hex(&h), "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom");
        let h = nsec3_hash(&"a.example.".parse().unwrap(), &salt, 12);
        assert_eq!(base32hex(&h), "35mthgpgcu1qg68fab165klnsnk3dpvl");
    }

    #[test]
    fn type_bitmap_matches_rfc4034_example() {
        // RFC 4034 §4.3: A MX RRSIG NSEC TYPE1234.
        let types = [RType::A, RType::MX, RType::RRSIG, RType::NSEC, RType(1234)];
        let bm = type_bitmap(&types);
        let expected = [
            0x00, 0x06, 0x40, 0x01, 0x00, 0x00, 0x00, 0x03, 0x04, 0x1b, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20,
        ];
        assert_eq!(bm, expected);
        assert_eq!(bitmap_types(&bm), types.to_vec());
    }

    #[test]
    fn key_tag_and_ds_match_rfc4034_example() {
        // RFC 4034 §5.4: the DS for dskey.example.com. with key tag 60485.
        let key = "AQOeiiR0GOMYkDshWoSKz9XzfwJr1AYtsmx3TGkJaNXVbfi/2pHm822aJ5iI9BMzNXxeYCmZDRD99WYwYqUSdjMmmAphXdvxegXd/M5+X7OrzKBaMbCVdFLUUh6DhweJBjEVv5f2wwjM9XzcnOf+EPbtG9DMBmADjFDc2w/rljwvFw==";
        let public = crate::encoding::from_base64(key).unwrap();
        let name: Name = "dskey.example.com.".parse().unwrap();
        let rd = dnskey_rdata(256, 5, &public);
        assert_eq!(key_tag(&rd), 60485);
        // The RFC gives a SHA-1 digest; check our DS layout with SHA-256.
        let ds = ds_rdata(&name, &rd, 5);
        assert_eq!(&ds[..4], &[0xec, 0x45, 5, 2]);
        assert_eq!(ds.len(), 36);
    }

    #[test]
    fn digest_ignores_order_and_sees_changes() {
        let a: Vec<Box<[u8]>> = vec![Box::new([1]), Box::new([2])];
        let b: Vec<Box<[u8]>> = vec![Box::new([2]), Box::new([1])];
        assert_eq!(rrset_digest(300, &a), rrset_digest(300, &b));
        assert_ne!(rrset_digest(300, &a), rrset_digest(301, &a));
        assert_ne!(rrset_digest(300, &a), rrset_digest(300, &a[..1]));
    }
}
