//! Formatting a decoded record as a query log line, straight into a
//! buffer by index: no allocation, no `fmt` on the common path.
//!
//! ```text
//!  Record ─► Clock::push (RFC 3339 time, the second's text cached)
//!         ─► format_body: CLIENT#PORT PROTO QNAME CLASS TYPE RCODE FLAGS SIZE
//!              push_ip, push_name (escaped), class/type mnemonics, rcode_name,
//!              FLAG_TEXT (one of 32 texts)
//!  syslog RFC 3164 ─► push_rfc3164_time instead of the clock
//! ```

use super::record::{Record, DNSSEC_OK, EDNS, QUESTION, RD, REPLIED, TCP};
use dns::civil::civil_from_days;
use std::io::Write;
use std::net::IpAddr;

/// Where a line is formatted: a buffer with room for the longest line
/// ([`MAX_LINE`]) after `at`, written by index (no capacity check or length
/// update per byte, as a `Vec` push would do).
pub(super) struct Out<'b> {
    pub(super) buf: &'b mut [u8],
    pub(super) at: usize,
}

impl std::fmt::Write for Out<'_> {
    /// Text as its bytes (the shared name escaper writes through this).
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.bytes(s.as_bytes());
        Ok(())
    }
}

impl Out<'_> {
    /// One byte.
    #[inline]
    pub(super) fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }

    /// Bytes as they are.
    #[inline]
    pub(super) fn bytes(&mut self, s: &[u8]) {
        self.buf[self.at..self.at + s.len()].copy_from_slice(s);
        self.at += s.len();
    }

    /// `v` in decimal.
    #[inline]
    fn num(&mut self, mut v: u32) {
        let mut digits = 1;
        let mut t = v;
        while t >= 10 {
            t /= 10;
            digits += 1;
        }
        let end = self.at + digits;
        for d in self.buf[self.at..end].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        self.at = end;
    }
}

/// The longest line: the time, an IPv6 address, a 255-byte name with
/// every byte escaped (4 bytes each), the other fields at their longest.
pub(super) const MAX_LINE: usize = 1280;

/// The line without its time: `CLIENT#PORT PROTO QNAME CLASS TYPE RCODE FLAGS SIZE`.
pub(super) fn format_body(r: &Record, out: &mut Out) {
    push_ip(out, r.addr);
    out.byte(b'#');
    out.num(u32::from(r.port));
    out.bytes(if r.bits & TCP != 0 {
        b" tcp "
    } else {
        b" udp "
    });
    if r.bits & QUESTION != 0 {
        push_name(out, r.name);
        out.byte(b' ');
        match r.qclass {
            1 => out.bytes(b"IN"),
            3 => out.bytes(b"CH"),
            4 => out.bytes(b"HS"),
            255 => out.bytes(b"ANY"),
            c => {
                out.bytes(b"CLASS");
                out.num(u32::from(c));
            }
        }
        out.byte(b' ');
        match r.qtype {
            1 => out.bytes(b"A"),
            28 => out.bytes(b"AAAA"),
            t => out.bytes(dns::RType(t).mnemonic().as_bytes()),
        }
        out.byte(b' ');
    } else {
        out.bytes(b"- - - ");
    }
    let rd = r.bits & RD != 0;
    if r.bits & REPLIED == 0 {
        out.bytes(if rd { b"DROPPED rd 0" } else { b"DROPPED - 0" });
        return;
    }
    out.bytes(rcode_name(r.reply_flags[1] & 0x0f).as_bytes());
    out.byte(b' ');
    // rd, e, do, aa, tc: five bits, one of 32 texts.
    let mask = usize::from(rd)
        | usize::from(r.bits & EDNS != 0) << 1
        | usize::from(r.bits & DNSSEC_OK != 0) << 2
        | usize::from(r.reply_flags[0] & 0x04 != 0) << 3
        | usize::from(r.reply_flags[0] & 0x02 != 0) << 4;
    out.bytes(FLAG_TEXT[mask].as_bytes());
    out.byte(b' ');
    out.num(u32::from(r.size));
}

/// FLAGS for each combination of rd (bit 0), e, do, aa, tc (bit 4).
const FLAG_TEXT: [&str; 32] = [
    "-",
    "rd",
    "e",
    "rd,e",
    "do",
    "rd,do",
    "e,do",
    "rd,e,do",
    "aa",
    "rd,aa",
    "e,aa",
    "rd,e,aa",
    "do,aa",
    "rd,do,aa",
    "e,do,aa",
    "rd,e,do,aa",
    "tc",
    "rd,tc",
    "e,tc",
    "rd,e,tc",
    "do,tc",
    "rd,do,tc",
    "e,do,tc",
    "rd,e,do,tc",
    "aa,tc",
    "rd,aa,tc",
    "e,aa,tc",
    "rd,e,aa,tc",
    "do,aa,tc",
    "rd,do,aa,tc",
    "e,do,aa,tc",
    "rd,e,do,aa,tc",
];

/// An IPv4 address in dotted decimal, an IPv6 one as `Display` writes it.
fn push_ip(out: &mut Out, addr: IpAddr) {
    match addr {
        IpAddr::V4(a) => {
            let [a, b, c, d] = a.octets();
            out.num(u32::from(a));
            out.byte(b'.');
            out.num(u32::from(b));
            out.byte(b'.');
            out.num(u32::from(c));
            out.byte(b'.');
            out.num(u32::from(d));
        }
        IpAddr::V6(a) => {
            let mut text = [0u8; 64];
            let mut w = &mut text[..];
            let _ = write!(w, "{a}");
            let len = 64 - w.len();
            out.bytes(&text[..len]);
        }
    }
}

/// Bytes a label shows as they are: letters, digits, `-` and `_` (one
/// table load per byte instead of four comparisons).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
        b += 1;
    }
    t
};

/// A name in presentation form from its wire bytes (no compression),
/// letter case kept, special characters escaped.
fn push_name(out: &mut Out, name: &[u8]) {
    if name.len() <= 1 {
        out.byte(b'.');
        return;
    }
    let mut at = 0;
    while at + 1 < name.len() {
        let len = usize::from(name[at]);
        let label = &name[at + 1..(at + 1 + len).min(name.len())];
        if label.iter().all(|&b| PLAIN[usize::from(b)]) {
            out.bytes(label);
        } else {
            let _ = dns::name::write_label(out, label, dns::name::Escape::Presentation);
        }
        out.byte(b'.');
        at += 1 + len;
    }
}

/// Rcode mnemonic.
pub fn rcode_name(rcode: u8) -> &'static str {
    dns::rcode::Rcode(u16::from(rcode))
        .name()
        .filter(|_| rcode <= 10)
        .unwrap_or("RCODE_OTHER")
}

/// `write!` into `out` through a small stack buffer (`Out` is a plain slice).
fn push_fmt(out: &mut Out, args: std::fmt::Arguments) {
    let mut text = [0u8; 48];
    let mut w = &mut text[..];
    let _ = w.write_fmt(args);
    let len = 48 - w.len();
    out.bytes(&text[..len]);
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC).
pub(super) fn push_rfc3339(out: &mut Out, unix_us: u64) {
    let secs = (unix_us / 1_000_000) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    push_fmt(
        out,
        format_args!(
            "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
            s / 3600,
            s / 60 % 60,
            s % 60,
            unix_us % 1_000_000
        ),
    );
}

/// `Mmm dd HH:MM:SS` (UTC), the RFC 3164 syslog time.
pub(super) fn push_rfc3164_time(out: &mut Out, unix_us: u64) {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = (unix_us / 1_000_000) as i64;
    let (_, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    push_fmt(
        out,
        format_args!(
            "{} {d:>2} {:02}:{:02}:{:02}",
            MONTHS[(mo - 1) as usize],
            s / 3600,
            s / 60 % 60,
            s % 60
        ),
    );
}

/// The RFC 3339 time of a line: the last time's text kept whole (the
/// lines of one UDP batch share their time), the part up to the second
/// cached (lines come in thousands per second).
#[derive(Default)]
pub(super) struct Clock {
    second: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS.`
    prefix: [u8; 20],
    last: Option<u64>,
    /// `YYYY-MM-DDTHH:MM:SS.ffffffZ` of `last`.
    text: [u8; 27],
}

impl Clock {
    /// The RFC 3339 time of `unix_us`.
    pub(super) fn push(&mut self, out: &mut Out, unix_us: u64) {
        if self.last != Some(unix_us) {
            let second = unix_us / 1_000_000;
            if self.second != Some(second) {
                let mut text = [0u8; 32];
                push_rfc3339(
                    &mut Out {
                        buf: &mut text,
                        at: 0,
                    },
                    second * 1_000_000,
                );
                self.prefix.copy_from_slice(&text[..20]);
                self.second = Some(second);
            }
            self.text[..20].copy_from_slice(&self.prefix);
            let mut micros = unix_us % 1_000_000;
            for d in self.text[20..26].iter_mut().rev() {
                *d = b'0' + (micros % 10) as u8;
                micros /= 10;
            }
            self.text[26] = b'Z';
            self.last = Some(unix_us);
        }
        out.bytes(&self.text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::querylog::record::{decode, encode, MAX_RECORD};
    use crate::querylog::ring::Ring;
    use crate::querylog::tests::{drain, query, reply};

    /// What a formatting function writes.
    fn text(f: impl FnOnce(&mut Out)) -> String {
        let mut buf = [0u8; MAX_LINE];
        let mut out = Out {
            buf: &mut buf,
            at: 0,
        };
        f(&mut out);
        let len = out.at;
        String::from_utf8(buf[..len].to_vec()).unwrap()
    }

    #[test]
    fn dates() {
        assert_eq!(text(|o| push_rfc3339(o, 0)), "1970-01-01T00:00:00.000000Z");
        // 2024-02-29T12:34:56.789Z (a leap day)
        assert_eq!(
            text(|o| push_rfc3339(o, 1_709_210_096_789_000)),
            "2024-02-29T12:34:56.789000Z"
        );
        assert_eq!(
            text(|o| push_rfc3164_time(o, 1_709_210_096_789_000)),
            "Feb 29 12:34:56"
        );
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        // The cached clock gives the same text, across a second boundary.
        let mut clock = Clock::default();
        for us in [
            1_709_210_096_789_000,
            1_709_210_096_789_000,
            1_709_210_096_999_999,
            1_709_210_097_000_042,
            1_709_210_097_000_042,
            1_709_210_097_000_043,
        ] {
            assert_eq!(text(|o| clock.push(o, us)), text(|o| push_rfc3339(o, us)));
        }
    }

    /// The line body for one query, through encode, a ring and decode.
    fn body(q: &[u8], reply: Option<&[u8]>, peer: &str, tcp: bool) -> String {
        // A used buffer: encode must not rely on zeroed bytes.
        let mut rec = [0xAA; MAX_RECORD];
        let len = encode(&mut rec, q, reply, peer.parse().unwrap(), tcp, 7);
        assert_eq!(len % 8, 0);
        let ring = Ring::new(1);
        let (mut tail, mut head) = (0, 0);
        assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        let mut bytes = Vec::new();
        assert_eq!(drain(&ring, &mut bytes), len as u64 / 8);
        let (record, used) = decode(&bytes);
        assert_eq!(used, bytes.len(), "the record's length");
        assert_eq!(record.unix_us, 7);
        text(|o| format_body(&record, o))
    }

    #[test]
    fn lines() {
        let peer = "192.0.2.7:53124";
        let q = query(b"\x03www\x07Example\x03com\x00", 1, Some(true));
        assert_eq!(
            body(&q, Some(&reply(0x85, 0, 56)), peer, false),
            "192.0.2.7#53124 udp www.Example.com. IN A NOERROR rd,e,do,aa 56"
        );
        let q = query(b"\x02a.\x00", 28, None);
        assert_eq!(
            body(&q, Some(&reply(0x84, 0x03, 90)), peer, false),
            "192.0.2.7#53124 udp a\\.. IN AAAA NXDOMAIN rd,aa 90"
        );
        assert_eq!(
            body(&[1, 2, 0], None, peer, false),
            "192.0.2.7#53124 udp - - - DROPPED - 0"
        );
        // IPv6, TCP, the root, an unknown class and type, odd bytes, no flags.
        let mut q = query(b"\x00", 65280, None);
        q[2] = 0;
        let n = q.len();
        q[n - 1] = 9;
        assert_eq!(
            body(&q, Some(&reply(0x80, 0x05, 12)), "[2001:db8::1]:53", true),
            "2001:db8::1#53 tcp . CLASS9 TYPE65280 REFUSED - 12"
        );
        let q = query(b"\x03a b\x02\x01\xff\x00", 16, Some(false));
        assert_eq!(
            body(&q, Some(&reply(0x83, 0x02, 30)), peer, false),
            "192.0.2.7#53124 udp a\\032b.\\001\\255. IN TXT SERVFAIL rd,e,tc 30"
        );
        // A query without a reply keeps its name.
        let q = query(b"\x01x\x00", 1, None);
        assert_eq!(
            body(&q, None, peer, false),
            "192.0.2.7#53124 udp x. IN A DROPPED rd 0"
        );
    }
}
