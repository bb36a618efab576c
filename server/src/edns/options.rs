//! The EDNS options the server knows: what a query's option asks for, and
//! what a reply's OPT then carries. Adding an option is editing this file.
//!
//! ```text
//!  query's OPT rdata, option by option (request.rs walks it once)
//!     └─ Asked::note(code, data)
//!          NSID   (3, RFC 5001): asks for the server's identity
//!          EXPIRE (9, RFC 7314): asks for the zone's expire timer
//!          anything else (cookies, client subnet, padding, keepalive…):
//!            ignored, only checked to be whole
//!  Asked::bits ─► the packet cache keys such queries apart
//!  decorate(reply, asked, Offer { nsid, expire }, limit), after render:
//!     NSID asked and --nsid set  ─► option 3 with the server's identity
//!     EXPIRE asked and an expire ─► option 9 with the SOA EXPIRE field
//!        (SOA answers at a zone apex and the first message of a transfer:
//!        a primary's timer is its SOA's, RFC 7314 §3)
//!     an option that would pass `limit` is left out (RFC 5001 §2.2)
//!  EDE (15, RFC 8914) info-codes the server sends: EDE_*
//! ```
//!
//! To add an option: its code here, what a query's option means in
//! [`Asked::note`] (and a bit in [`Asked::bits`] if its reply differs), and
//! what the reply carries in [`decorate`] (with what the caller knows in
//! [`Offer`]).

use super::reply::add_option;

/// The NSID option code (RFC 5001).
pub const OPTION_NSID: u16 = 3;
/// The EDNS EXPIRE option code (RFC 7314).
pub const OPTION_EXPIRE: u16 = 9;
/// The Extended DNS Error option code (RFC 8914).
pub const OPTION_EDE: u16 = 15;

/// Extended DNS Error "Stale Answer" (RFC 8914 §4.4).
pub const EDE_STALE_ANSWER: u16 = 3;
/// Extended DNS Error "Not Authoritative" (RFC 8914 §4.21).
pub const EDE_NOT_AUTHORITATIVE: u16 = 20;

/// The longest NSID accepted (an option's data is at most 65535 bytes;
/// identities are short).
pub const MAX_NSID_LEN: usize = 512;

/// Options a query carried that ask for something in the reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// An NSID option (RFC 5001 §2.1: empty in queries).
    pub nsid: bool,
    /// An EXPIRE option (RFC 7314 §2: empty in queries).
    pub expire: bool,
}

impl Asked {
    /// Notes one option of the query; options the server does not act on
    /// are ignored (RFC 6891 §6.1.2).
    #[inline]
    pub fn note(&mut self, code: u16, _data: &[u8]) {
        match code {
            OPTION_NSID => self.nsid = true,
            OPTION_EXPIRE => self.expire = true,
            _ => {}
        }
    }

    /// Two bits for keys that must tell such queries apart (packet cache).
    pub fn bits(self) -> u8 {
        u8::from(self.nsid) | (u8::from(self.expire) << 1)
    }
}

/// What the server has to put in a reply's OPT, if the query asked.
#[derive(Clone, Copy, Debug, Default)]
pub struct Offer<'a> {
    /// The server's identity (`--nsid`).
    pub nsid: Option<&'a [u8]>,
    /// The zone's SOA EXPIRE field (apex SOA answers, transfers).
    pub expire: Option<u32>,
}

/// Adds what `asked` asks for and `offer` has to `reply`'s OPT, each
/// only if it fits in `limit`.
pub fn decorate(reply: &mut Vec<u8>, asked: Asked, offer: Offer<'_>, limit: usize) {
    if let (true, Some(id)) = (asked.nsid, offer.nsid) {
        add_option(reply, OPTION_NSID, id, limit);
    }
    if let (true, Some(expire)) = (asked.expire, offer.expire) {
        add_option(reply, OPTION_EXPIRE, &expire.to_be_bytes(), limit);
    }
}

/// Adds an Extended DNS Error option with `code` (no text) to the OPT
/// record of a finished `reply`; false, and nothing changed, when the
/// reply has no OPT (the query had no EDNS) or would then exceed `limit`.
pub fn add_ede(reply: &mut Vec<u8>, code: u16, limit: usize) -> bool {
    add_option(reply, OPTION_EDE, &code.to_be_bytes(), limit)
}

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

/// The EXPIRE field of SOA `rdata` (uncompressed wire form).
pub fn soa_expire(rdata: &[u8]) -> Option<u32> {
    let at = rdata.len().checked_sub(8)?;
    Some(u32::from_be_bytes(rdata[at..at + 4].try_into().ok()?))
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
        assert!(parse_nsid(&"x".repeat(MAX_NSID_LEN + 1)).is_err());
        // mname ".", rname ".", serial 1, refresh 2, retry 3, expire 4, minimum 5
        let rd = [
            0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5,
        ];
        assert_eq!(soa_expire(&rd), Some(4));
        assert_eq!(soa_expire(&[1, 2]), None);
    }

    #[test]
    fn known_options_are_noted_and_keyed_apart() {
        let mut asked = Asked::default();
        asked.note(10, &[1, 2, 3, 4, 5, 6, 7, 8]); // a cookie: ignored
        asked.note(8, &[0, 1, 24, 0, 192, 0, 2]); // client subnet: ignored
        asked.note(12, &[0; 4]); // padding: ignored
        assert_eq!(asked, Asked::default());
        assert_eq!(asked.bits(), 0);
        asked.note(OPTION_NSID, &[]);
        assert_eq!(asked.bits(), 1);
        asked.note(OPTION_EXPIRE, &[]);
        assert_eq!(asked.bits(), 3);
    }
}
