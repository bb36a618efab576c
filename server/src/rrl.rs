//! Response rate limiting (RRL) for UDP replies, by source prefix.
//!
//! ```text
//!  reply to peer ─► prefix (IPv4 /24, IPv6 /56) ─► hash ─► bucket
//!     bucket = (second, replies this second) in one AtomicU64, no lock
//!     replies ≤ rate ─► send
//!     over the rate ─► slip: every slip-th limited reply goes out as a
//!                      bare truncated reply (TC, question only: a real
//!                      client retries over TCP); the others are dropped
//! ```
//!
//! Off unless `--rrl-rate` is set. Spoofed floods aimed at a victim get at
//! most `rate` full replies a second per victim prefix, plus 1/slip small TC
//! replies; a real client behind the prefix still gets through by TCP (not
//! limited: it cannot be spoofed). Buckets are a fixed table: two prefixes
//! that hash to one bucket share a limit, which errs on the side of
//! limiting, never on the side of amplifying.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Settings of the limiter.
#[derive(Clone, Copy, Debug)]
pub struct RrlConfig {
    /// Replies per second per prefix before limiting starts.
    pub rate: u32,
    /// 0: drop every limited reply; n: send every n-th as a TC reply.
    pub slip: u32,
    /// Prefix length for IPv4 sources.
    pub ipv4_prefix: u8,
    /// Prefix length for IPv6 sources.
    pub ipv6_prefix: u8,
    /// Buckets in the table (rounded up to a power of two).
    pub buckets: usize,
}

impl Default for RrlConfig {
    fn default() -> Self {
        RrlConfig {
            rate: 0,
            slip: 2,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            buckets: 1 << 16,
        }
    }
}

/// What to do with one reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send the reply as it is.
    Send,
    /// Send a truncated reply instead (TC set, question only).
    Slip,
    /// Send nothing.
    Drop,
}

/// The limiter: a table of per-prefix counters.
pub struct Rrl {
    config: RrlConfig,
    table: Box<[AtomicU64]>,
    mask: usize,
    started: Instant,
    limited: AtomicU64,
    /// Replies sent as TC because of the limit.
    pub slipped: AtomicU64,
    /// Replies dropped because of the limit.
    pub dropped: AtomicU64,
}

impl Rrl {
    /// A limiter; `None` when `config.rate` is 0 (off).
    pub fn new(config: RrlConfig) -> Option<Rrl> {
        if config.rate == 0 {
            return None;
        }
        let size = config.buckets.max(1).next_power_of_two();
        Some(Rrl {
            config,
            table: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size - 1,
            started: Instant::now(),
            limited: AtomicU64::new(0),
            slipped: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        })
    }

    fn prefix_key(&self, ip: IpAddr) -> u64 {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match ip {
            IpAddr::V4(v4) => {
                let bits = u32::from(v4);
                let p = u32::from(self.config.ipv4_prefix.min(32));
                let masked = if p == 0 {
                    0
                } else {
                    bits & (u32::MAX << (32 - p))
                };
                u64::from(masked) | 1 << 63
            }
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                let p = u32::from(self.config.ipv6_prefix.min(128));
                let masked = if p == 0 {
                    0
                } else {
                    bits & (u128::MAX << (128 - p))
                };
                ((masked >> 64) as u64) ^ (masked as u64).rotate_left(29)
            }
        }
    }

    /// Counts one reply to `ip` and says what to do with it.
    pub fn check(&self, ip: IpAddr) -> Verdict {
        let key = self.prefix_key(ip);
        let hash = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let bucket = &self.table[(hash >> 32) as usize & self.mask];
        let now = self.started.elapsed().as_secs() as u32;
        let mut current = bucket.load(Ordering::Relaxed);
        let count = loop {
            let (second, count) = ((current >> 32) as u32, current as u32);
            let next_count = if second == now {
                count.saturating_add(1)
            } else {
                1
            };
            let next = u64::from(now) << 32 | u64::from(next_count);
            match bucket.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break next_count,
                Err(actual) => current = actual,
            }
        };
        if count <= self.config.rate {
            return Verdict::Send;
        }
        let n = self.limited.fetch_add(1, Ordering::Relaxed) + 1;
        if self.config.slip > 0 && n.is_multiple_of(u64::from(self.config.slip)) {
            self.slipped.fetch_add(1, Ordering::Relaxed);
            Verdict::Slip
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            Verdict::Drop
        }
    }
}

/// Cuts `reply` down to a truncated reply: header with TC set and counts
/// zeroed but the question, then the question. False if the reply has no
/// readable question (it is then dropped instead).
pub fn make_slip(reply: &mut Vec<u8>) -> bool {
    if reply.len() < 12 {
        return false;
    }
    let qdcount = u16::from_be_bytes([reply[4], reply[5]]);
    let mut end = 12;
    if qdcount == 1 {
        loop {
            let Some(&len) = reply.get(end) else {
                return false;
            };
            if len == 0 {
                end += 1;
                break;
            }
            if len > 63 {
                return false;
            }
            end += 1 + usize::from(len);
        }
        end += 4;
        if end > reply.len() {
            return false;
        }
    } else if qdcount != 0 {
        return false;
    }
    reply.truncate(end);
    reply[2] |= 0x02; // TC
    reply[6..12].fill(0);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rrl(rate: u32, slip: u32) -> Rrl {
        Rrl::new(RrlConfig {
            rate,
            slip,
            ..RrlConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn off_by_default() {
        assert!(Rrl::new(RrlConfig::default()).is_none());
    }

    #[test]
    fn a_prefix_gets_its_rate_then_slips_and_drops() {
        let r = rrl(10, 2);
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let verdicts: Vec<Verdict> = (0..30).map(|_| r.check(ip)).collect();
        // All within one second on any sane machine.
        assert!(verdicts[..10].iter().all(|v| *v == Verdict::Send));
        let over = &verdicts[10..];
        let slips = over.iter().filter(|v| **v == Verdict::Slip).count();
        let drops = over.iter().filter(|v| **v == Verdict::Drop).count();
        assert_eq!(slips, 10);
        assert_eq!(drops, 10);
        // The same /24 shares the limit; another /24 does not.
        assert_ne!(r.check("192.0.2.200".parse().unwrap()), Verdict::Send);
        assert_eq!(r.check("192.0.3.1".parse().unwrap()), Verdict::Send);
        // IPv6 by /56.
        let a: IpAddr = "2001:db8:0:100::1".parse().unwrap();
        let b: IpAddr = "2001:db8:0:1ff::2".parse().unwrap();
        for _ in 0..10 {
            assert_eq!(r.check(a), Verdict::Send);
        }
        assert_ne!(r.check(b), Verdict::Send);
    }

    #[test]
    fn slip_zero_drops_everything_over_the_rate() {
        let r = rrl(1, 0);
        let ip: IpAddr = "198.51.100.1".parse().unwrap();
        assert_eq!(r.check(ip), Verdict::Send);
        assert!((0..20).all(|_| r.check(ip) == Verdict::Drop));
    }

    #[test]
    fn a_slip_reply_is_the_question_with_tc() {
        let mut reply = vec![0x12, 0x34, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 1];
        reply.extend_from_slice(b"\x03www\x00\x00\x01\x00\x01");
        reply.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
        assert!(make_slip(&mut reply));
        assert_eq!(reply.len(), 12 + 9);
        assert_eq!(reply[2], 0x86);
        assert_eq!(&reply[4..12], &[0, 1, 0, 0, 0, 0, 0, 0]);
        let mut junk = vec![0; 5];
        assert!(!make_slip(&mut junk));
    }
}
