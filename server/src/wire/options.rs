//! EDNS options a query asks for (RFC 6891 §6.1.2 layout).
//!
//! ```text
//!  OPT rdata: (code u16, length u16, data)* ─► Asked { nsid, expire }
//!     NSID   (3, RFC 5001): an empty option asks for the server's identity
//!     EXPIRE (9, RFC 7314): an empty option asks for the zone's expire timer
//! ```

/// The NSID option code.
pub const OPTION_NSID: u16 = 3;
/// The EDNS EXPIRE option code.
pub const OPTION_EXPIRE: u16 = 9;

/// Options a query carried that ask for something in the reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asked {
    /// An NSID option (RFC 5001 §2.1: empty in queries).
    pub nsid: bool,
    /// An EXPIRE option (RFC 7314 §2: empty in queries).
    pub expire: bool,
}

impl Asked {
    /// Two bits for keys that must tell such queries apart (packet cache).
    pub fn bits(self) -> u8 {
        u8::from(self.nsid) | (u8::from(self.expire) << 1)
    }
}

/// What the options in `rdata` (an OPT record's) ask for; a malformed
/// tail ends the scan (the query parser rejects such queries anyway).
pub fn asked_in(mut rdata: &[u8]) -> Asked {
    let mut asked = Asked::default();
    while rdata.len() >= 4 {
        let code = u16::from_be_bytes([rdata[0], rdata[1]]);
        let len = usize::from(u16::from_be_bytes([rdata[2], rdata[3]]));
        match code {
            OPTION_NSID => asked.nsid = true,
            OPTION_EXPIRE => asked.expire = true,
            _ => {}
        }
        let Some(rest) = rdata.get(4 + len..) else {
            break;
        };
        rdata = rest;
    }
    asked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_found_among_others() {
        assert_eq!(asked_in(&[]), Asked::default());
        let both = [0, 10, 0, 2, 1, 2, 0, 3, 0, 0, 0, 9, 0, 0];
        assert_eq!(
            asked_in(&both),
            Asked {
                nsid: true,
                expire: true
            }
        );
        assert_eq!(asked_in(&both).bits(), 3);
        assert!(!asked_in(&[0, 10, 0, 4, 0, 3, 0, 0]).nsid); // inside a cookie
        assert!(asked_in(&[0, 3, 0, 0]).nsid);
    }
}
