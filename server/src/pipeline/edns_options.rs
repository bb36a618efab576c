//! NSID (RFC 5001) and EDNS EXPIRE (RFC 7314) in replies.
//!
//! ```text
//!  asked(query bytes) ─► the OPT's options (wire/options.rs)
//!  decorate(reply, asked, nsid, expire, limit):
//!     NSID asked and --nsid set    ─► option 3 with the server's identity
//!     EXPIRE asked and an expire   ─► option 9 with the SOA EXPIRE field
//!        (SOA answers at a zone apex and the first message of a transfer:
//!        a primary's timer is its SOA's, RFC 7314 §3)
//!     an option that would pass `limit` is left out (RFC 5001 §2.2)
//! ```

use super::render::opt_rdlength_at;
use crate::wire::options::{asked_in, Asked, OPTION_EXPIRE, OPTION_NSID};

/// The longest NSID accepted (an option's data is at most 65535 bytes;
/// identities are short).
pub const MAX_NSID_LEN: usize = 512;

/// `--nsid`: text as its bytes, or `hex:` followed by hex digits.
pub fn parse_nsid(text: &str) -> Result<Vec<u8>, String> {
    let bytes = match text.strip_prefix("hex:") {
        Some(hex) => dns::encoding::from_hex(hex).ok_or_else(|| format!("{hex:?} is not hex"))?,
        None => text.as_bytes().to_vec(),
    };
    match bytes.len() {
        0 => Err("an empty identity".into()),
        n if n > MAX_NSID_LEN => Err(format!("longer than {MAX_NSID_LEN} bytes")),
        _ => Ok(bytes),
    }
}

/// What the query `packet`'s OPT asks for (nothing without an OPT).
pub fn asked(packet: &[u8]) -> Asked {
    let Some(at) = opt_rdlength_at(packet) else {
        return Asked::default();
    };
    let len = usize::from(u16::from_be_bytes([packet[at], packet[at + 1]]));
    packet
        .get(at + 2..at + 2 + len)
        .map(asked_in)
        .unwrap_or_default()
}

/// The EXPIRE field of SOA `rdata` (uncompressed wire form).
pub fn soa_expire(rdata: &[u8]) -> Option<u32> {
    let at = rdata.len().checked_sub(8)?;
    Some(u32::from_be_bytes(rdata[at..at + 4].try_into().ok()?))
}

/// Adds what `asked` asks for and we have to `reply`'s OPT, each only if
/// it fits in `limit`.
pub fn decorate(
    reply: &mut Vec<u8>,
    asked: Asked,
    nsid: Option<&[u8]>,
    expire: Option<u32>,
    limit: usize,
) {
    if let (true, Some(id)) = (asked.nsid, nsid) {
        add_option(reply, OPTION_NSID, id, limit);
    }
    if let (true, Some(expire)) = (asked.expire, expire) {
        add_option(reply, OPTION_EXPIRE, &expire.to_be_bytes(), limit);
    }
}

/// Appends option `code` with `data` to the OPT record of `reply` (the
/// last record of a reply we built); false when there is no OPT or the
/// reply would pass `limit`.
pub fn add_option(reply: &mut Vec<u8>, code: u16, data: &[u8], limit: usize) -> bool {
    let grow = 4 + data.len();
    if reply.len() + grow > limit {
        return false;
    }
    let Some(rdlen_at) = opt_rdlength_at(reply) else {
        return false;
    };
    let rdlen = u16::from_be_bytes([reply[rdlen_at], reply[rdlen_at + 1]]);
    let end = rdlen_at + 2 + usize::from(rdlen);
    let mut option = Vec::with_capacity(grow);
    option.extend_from_slice(&code.to_be_bytes());
    option.extend_from_slice(&(data.len() as u16).to_be_bytes());
    option.extend_from_slice(data);
    reply.splice(end..end, option);
    let rdlen = rdlen + grow as u16;
    reply[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_and_timers() {
        assert_eq!(parse_nsid("ns1").unwrap(), b"ns1");
        assert_eq!(parse_nsid("hex:6e7331").unwrap(), b"ns1");
        assert!(parse_nsid("hex:zz").is_err());
        assert!(parse_nsid("").is_err());
        // mname ".", rname ".", serial 1, refresh 2, retry 3, expire 4, minimum 5
        let rd = [
            0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
        ];
        assert_eq!(soa_expire(&rd), Some(4));
        assert_eq!(soa_expire(&[1, 2]), None);
    }
}
