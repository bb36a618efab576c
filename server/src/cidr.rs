//! Address blocks (`192.0.2.0/24`, `2001:db8::/32`) for access lists: who
//! may transfer zones, where a TSIG key may be used from.
//!
//! ```text
//!  "192.0.2.0/24" ─► Cidr (an ipnet::IpNet) ─► contains(ip): the first
//!  `prefix` bits agree (IPv4-mapped IPv6 compared as IPv4)
//! ```

use ipnet::IpNet;
use std::net::IpAddr;
use std::str::FromStr;

/// An address block, `192.0.2.0/24` or `2001:db8::/32`; a bare address
/// is a single host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr(IpNet);

impl Cidr {
    /// Loopback, IPv4 and IPv6 (the in-process rigs' transfer default; the
    /// server's own default is nobody).
    pub fn loopback() -> Vec<Cidr> {
        ["127.0.0.0/8", "::1/128"].map(Cidr::known).to_vec()
    }

    /// Every address (for a transfer authorised by TSIG).
    pub fn everything() -> Vec<Cidr> {
        ["0.0.0.0/0", "::/0"].map(Cidr::known).to_vec()
    }

    fn known(text: &str) -> Cidr {
        Cidr(text.parse().expect("a block written here"))
    }

    /// True if `ip` is inside the block (IPv4-mapped IPv6 counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        self.0.contains(&ip)
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let Some((addr, prefix)) = text.split_once('/') else {
            let host: IpAddr = text
                .parse()
                .map_err(|_| format!("{text}: not an IP address"))?;
            return Ok(Cidr(IpNet::from(host)));
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{text}: not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        prefix
            .parse::<u8>()
            .ok()
            .and_then(|p| IpNet::new(addr, p).ok())
            .map(Cidr)
            .ok_or_else(|| format!("{text}: prefix length must be 0..={max}"))
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_blocks_match_by_prefix() {
        let net: Cidr = "192.0.2.0/24".parse().unwrap();
        assert!(net.contains("192.0.2.200".parse().unwrap()));
        assert!(!net.contains("192.0.3.1".parse().unwrap()));
        assert!(net.contains("::ffff:192.0.2.9".parse().unwrap()));
        let odd: Cidr = "10.0.0.0/9".parse().unwrap();
        assert!(odd.contains("10.127.255.255".parse().unwrap()));
        assert!(!odd.contains("10.128.0.0".parse().unwrap()));
        let host: Cidr = "2001:db8::1".parse().unwrap();
        assert!(host.contains("2001:db8::1".parse().unwrap()));
        assert!(!host.contains("2001:db8::2".parse().unwrap()));
        assert!(!host.contains("192.0.2.1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("203.0.113.7".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("example".parse::<Cidr>().is_err());
        let lo = Cidr::loopback();
        assert!(lo.iter().any(|c| c.contains("127.0.0.1".parse().unwrap())));
        assert!(lo.iter().any(|c| c.contains("::1".parse().unwrap())));
        assert!(!lo.iter().any(|c| c.contains("192.0.2.1".parse().unwrap())));
    }
}
