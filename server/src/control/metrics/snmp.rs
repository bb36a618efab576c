//! The kernel's UDP drop counters, host-wide, read from `/proc/net/snmp`
//! (IPv4) and `/proc/net/snmp6` (IPv6) at each scrape. A file that cannot
//! be read (not Linux, no IPv6) gives no counts.
//!
//! ```text
//!  /proc/net/snmp:  "Udp: InDatagrams NoPorts InErrors … RcvbufErrors …"
//!                   "Udp: 123 4 5 … 6 …"      ─► udp4: header ⨯ values
//!  /proc/net/snmp6: "Udp6RcvbufErrors  12"    ─► udp6: name, value a line
//!  RcvbufErrors ─► rcvbuf, SndbufErrors ─► sndbuf, InErrors ─► in
//!  ─► (family ipv4|ipv6, kind, count), in the files' order
//! ```

/// (family, kind, count) from the kernel's UDP counters, host-wide.
pub(super) fn kernel_udp_errors() -> Vec<(&'static str, &'static str, u64)> {
    let read = |path| std::fs::read_to_string(path).unwrap_or_default();
    let mut out = udp4_errors(&read("/proc/net/snmp"));
    out.extend(udp6_errors(&read("/proc/net/snmp6")));
    out
}

/// The kind of error a counter's name (without its `Udp6` prefix) counts.
fn error_kind(name: &str) -> Option<&'static str> {
    match name {
        "RcvbufErrors" => Some("rcvbuf"),
        "SndbufErrors" => Some("sndbuf"),
        "InErrors" => Some("in"),
        _ => None,
    }
}

/// /proc/net/snmp: a "Udp:" header line, then a "Udp:" values line.
fn udp4_errors(text: &str) -> Vec<(&'static str, &'static str, u64)> {
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("Udp:")).collect();
    if rows.len() < 2 {
        return Vec::new();
    }
    let names = rows[0].split_whitespace();
    let values = rows[1].split_whitespace();
    names
        .zip(values)
        .filter_map(|(name, value)| Some(("ipv4", error_kind(name)?, value.parse().unwrap_or(0))))
        .collect()
}

/// /proc/net/snmp6: "Udp6RcvbufErrors  12" lines.
fn udp6_errors(text: &str) -> Vec<(&'static str, &'static str, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (name, value) = (parts.next()?, parts.next()?);
            let kind = error_kind(name.strip_prefix("Udp6")?)?;
            Some(("ipv6", kind, value.parse().unwrap_or(0)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_errors_from_both_files() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n\
                    Udp: 100 2 7 90 5 1 0 0 0\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n\
                    UdpLite: 0 0 9 0 9 9\n";
        assert_eq!(
            udp4_errors(snmp),
            [
                ("ipv4", "in", 7),
                ("ipv4", "rcvbuf", 5),
                ("ipv4", "sndbuf", 1)
            ]
        );
        assert_eq!(udp4_errors("Udp: InErrors\n"), []);
        assert_eq!(udp4_errors(""), []);
        let snmp6 = "Udp6InDatagrams                 \t40\nUdp6InErrors                    \t3\n\
                     Udp6RcvbufErrors                \t2\nUdp6SndbufErrors                \t0\n\
                     UdpLite6InErrors                \t8\nIp6InReceives 4\nUdp6RcvbufErrors\n";
        assert_eq!(
            udp6_errors(snmp6),
            [
                ("ipv6", "in", 3),
                ("ipv6", "rcvbuf", 2),
                ("ipv6", "sndbuf", 0)
            ]
        );
    }
}
