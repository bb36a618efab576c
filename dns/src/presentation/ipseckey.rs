//! IPSECKEY (RFC 4025 §3): `precedence gateway-type algorithm gateway [key]`,
//! the gateway's form chosen by its type.
//!
//! ```text
//!  gateway type 0 ─► "." (nothing on the wire)   1 ─► IPv4   2 ─► IPv6
//!               3 ─► a domain name (uncompressed)   public key: base64, may be absent
//! ```

use super::fields::Fields;
use super::lexer::Token;
use super::text::{decode_base64, ipv4, ipv6};

/// Reads one IPSECKEY rdata.
pub(crate) fn parse(f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    out.push(f.u8("IPSECKEY precedence")?);
    let kind = f.u8("IPSECKEY gateway type")?;
    out.push(kind);
    out.push(f.u8("IPSECKEY algorithm")?);
    let gateway = f.raw("IPSECKEY gateway")?;
    match kind {
        0 if gateway == b"." => {}
        0 => return Err("IPSECKEY gateway type 0 needs the gateway '.'".into()),
        1 => out.extend_from_slice(&ipv4(gateway)?.octets()),
        2 => out.extend_from_slice(&ipv6(gateway)?.octets()),
        3 => super::text::push_name(gateway, f.origin, out)?,
        _ => return Err(format!("unknown IPSECKEY gateway type {kind}")),
    }
    out.extend(decode_base64(f.rest().iter().map(Token::text))?);
    Ok(())
}
