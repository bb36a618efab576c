//! Where a NOTIFY goes: `ADDR[:PORT][,key=NAME]`.
//!
//! ```text
//!  "192.0.2.1"              ─► 192.0.2.1:53, unsigned
//!  "192.0.2.1:5300,key=xfr" ─► 192.0.2.1:5300, TSIG-signed with key xfr.
//!  "[2001:db8::1]:53", "2001:db8::1" (port 53)
//!  key=NAME must name one of the server's TSIG keys (--tsig-key, --tsig-keyfile)
//! ```

use crate::tsig::TsigKey;
use dns::Name;
use std::net::{IpAddr, SocketAddr};

/// The port NOTIFY goes to when none is given.
pub const DEFAULT_PORT: u16 = 53;

/// One secondary to notify.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its address.
    pub addr: SocketAddr,
    /// The key NOTIFYs to it are signed with, if any.
    pub key: Option<TsigKey>,
}

/// Reads `ADDR[:PORT][,key=NAME]`; the key is looked up in `keys`.
pub fn parse_target(text: &str, keys: &[TsigKey]) -> Result<Target, String> {
    let mut parts = text.trim().split(',');
    let addr = parse_addr(parts.next().unwrap_or_default())
        .ok_or_else(|| format!("notify target {text:?}: not ADDR[:PORT]"))?;
    let mut key = None;
    for part in parts {
        let Some(name) = part.trim().strip_prefix("key=") else {
            return Err(format!("notify target {text:?}: unknown part {part:?}"));
        };
        key = Some(find_key(name, keys).ok_or_else(|| {
            format!("notify target {text:?}: no TSIG key named {name:?} is configured")
        })?);
    }
    Ok(Target { addr, key })
}

/// True when `text` is well-formed, whatever keys exist (for --check-config).
pub fn check_syntax(text: &str) -> Result<(), String> {
    let mut parts = text.trim().split(',');
    parse_addr(parts.next().unwrap_or_default())
        .ok_or_else(|| format!("notify target {text:?}: not ADDR[:PORT]"))?;
    match parts.all(|p| p.trim().starts_with("key=")) {
        true => Ok(()),
        false => Err(format!(
            "notify target {text:?}: only key=NAME may follow the address"
        )),
    }
}

fn parse_addr(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    text.parse::<SocketAddr>()
        .ok()
        .or_else(|| Some(SocketAddr::new(text.parse::<IpAddr>().ok()?, DEFAULT_PORT)))
}

fn find_key(name: &str, keys: &[TsigKey]) -> Option<TsigKey> {
    let wanted: Name = name.trim().parse().ok()?;
    keys.iter().find(|k| k.name == wanted).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_ports_and_keys() {
        let key: TsigKey = "hmac-sha256:xfr:c2VjcmV0c2VjcmV0c2VjcmV0".parse().unwrap();
        let keys = [key];
        let t = parse_target("192.0.2.1", &keys).unwrap();
        assert_eq!(t.addr, "192.0.2.1:53".parse().unwrap());
        assert!(t.key.is_none());
        let t = parse_target("192.0.2.1:5300,key=xfr", &keys).unwrap();
        assert_eq!(t.addr.port(), 5300);
        assert_eq!(t.key.unwrap().name, "xfr.".parse().unwrap());
        let t = parse_target("2001:db8::1", &keys).unwrap();
        assert_eq!(t.addr, "[2001:db8::1]:53".parse().unwrap());
        assert_eq!(parse_target("[::1]:54", &keys).unwrap().addr.port(), 54);
        assert!(parse_target("192.0.2.1,key=other", &keys).is_err());
        assert!(parse_target("nowhere", &keys).is_err());
        assert!(parse_target("192.0.2.1,port=5", &keys).is_err());
        assert!(check_syntax("192.0.2.1,key=other").is_ok());
        assert!(check_syntax("192.0.2.1,port=5").is_err());
    }
}
