//! The printer of IPSECKEY (RFC 4025 §3): precedence, gateway type,
//! algorithm, the gateway in the form its type gives, the key in base64.
//!
//! ```text
//!  10 0 2 . KEY · 10 1 2 192.0.2.38 KEY · 10 2 2 2001:db8::1 KEY · 10 3 2 gw.example. KEY
//! ```

use crate::encoding::base64;

use super::addresses;
use super::fields::name_at;

/// IPSECKEY rdata as text, or `None` when it does not have the layout.
pub(super) fn ipseckey(rd: &[u8]) -> Option<String> {
    let [precedence, kind, algorithm] = *rd.get(..3)? else {
        return None;
    };
    let (gateway, end) = match kind {
        0 => (".".to_string(), 3),
        1 => (addresses::a(rd.get(3..7)?)?, 7),
        2 => (addresses::aaaa(rd.get(3..19)?)?, 19),
        3 => name_at(rd, 3)?,
        _ => return None,
    };
    let mut text = format!("{precedence} {kind} {algorithm} {gateway}");
    if end < rd.len() {
        text.push(' ');
        text.push_str(&base64(&rd[end..]));
    }
    Some(text)
}
