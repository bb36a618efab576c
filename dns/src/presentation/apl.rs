//! APL (RFC 3123): a list of address prefixes, `[!]AFI:address/prefix`.
//!
//! ```text
//!  "!1:192.168.38.0/28" ─► AFI 1 (IPv4) | prefix 28 | N=1, length | 192.168.38 (trailing zeros cut)
//!  "2:2001:db8::/32"    ─► AFI 2 (IPv6) | prefix 32 | N=0, length | 20 01 0d b8
//! ```

use super::fields::Fields;
use super::text::{ipv4, ipv6, parse_u8, show};

/// Reads every remaining token as one APL item.
pub(crate) fn parse(f: &mut Fields<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    for tok in f.rest() {
        item(tok.text(), out)?;
    }
    Ok(())
}

/// One `[!]AFI:address/prefix`.
fn item(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let bad = || {
        format!(
            "bad APL item '{}': expected [!]1:IPv4/prefix or [!]2:IPv6/prefix",
            show(raw)
        )
    };
    let (negated, rest) = match raw.strip_prefix(b"!") {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    let colon = rest.iter().position(|&b| b == b':').ok_or_else(bad)?;
    let slash = rest.iter().rposition(|&b| b == b'/').ok_or_else(bad)?;
    if slash < colon {
        return Err(bad());
    }
    let (afi_text, address, prefix) = (&rest[..colon], &rest[colon + 1..slash], &rest[slash + 1..]);
    let prefix = parse_u8(prefix, "APL prefix")?;
    let (afi, bytes, max): (u16, Vec<u8>, u8) = match afi_text {
        b"1" => (1, ipv4(address)?.octets().to_vec(), 32),
        b"2" => (2, ipv6(address)?.octets().to_vec(), 128),
        _ => return Err(bad()),
    };
    if prefix > max {
        return Err(format!(
            "APL prefix {prefix} longer than the address in '{}'",
            show(raw)
        ));
    }
    let used = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    out.extend_from_slice(&afi.to_be_bytes());
    out.push(prefix);
    out.push(used as u8 | if negated { 0x80 } else { 0 });
    out.extend_from_slice(&bytes[..used]);
    Ok(())
}
