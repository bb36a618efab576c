//! The printer of APL (RFC 3123): `[!]AFI:address/prefix` items.
//!
//! ```text
//!  AFI 1 | prefix 21 | N=0, 3 | c0 a8 20 ─► "1:192.168.32.0/21" (zeros restored)
//! ```

use super::addresses;

/// APL rdata as its items, or `None` when an item does not parse.
pub(super) fn apl(rd: &[u8]) -> Option<String> {
    let mut items = Vec::new();
    let mut at = 0;
    while at < rd.len() {
        let head = rd.get(at..at + 4)?;
        let afi = u16::from_be_bytes([head[0], head[1]]);
        let (prefix, negated, len) = (head[2], head[3] & 0x80 != 0, usize::from(head[3] & 0x7f));
        let part = rd.get(at + 4..at + 4 + len)?;
        let (size, max) = match afi {
            1 => (4, 32),
            2 => (16, 128),
            _ => return None,
        };
        (part.len() <= size && prefix <= max).then_some(())?;
        let mut address = vec![0; size];
        address[..part.len()].copy_from_slice(part);
        let text = match afi {
            1 => addresses::a(&address)?,
            _ => addresses::aaaa(&address)?,
        };
        let bang = if negated { "!" } else { "" };
        items.push(format!("{bang}{afi}:{text}/{prefix}"));
        at += 4 + len;
    }
    Some(items.join(" "))
}
