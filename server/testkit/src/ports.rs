//! Free loopback ports for the processes a test starts.
//!
//! ```text
//!  free_port()     ─► free for UDP and TCP alike (a DNS listener)
//!  free_tcp_port() ─► free for TCP (a control endpoint)
//!        │
//!        └─ candidates come from *outside* the kernel's ephemeral range
//!           (/proc/sys/net/ipv4/ip_local_port_range), one cursor per test
//!           process, each port handed out once
//! ```
//!
//! Why outside the ephemeral range: a port found by binding port 0 is an
//! ephemeral port. Between releasing it and the server binding it, any
//! outgoing connection of a test running beside it (a driver connecting
//! to the database, a query socket) may be given that same port, and the
//! server fails with "address already in use". Ports below the range are
//! never handed out by the kernel, so only a listener could take them,
//! and listeners here get their ports from this module.

use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The lowest port handed out (well above the registered services people
/// run on a development machine).
const LOWEST: u32 = 20_000;

/// A loopback port free for both UDP and TCP at the time of asking.
pub fn free_port() -> u16 {
    next_port(|port| {
        TcpListener::bind(("127.0.0.1", port)).is_ok()
            && UdpSocket::bind(("127.0.0.1", port)).is_ok()
    })
}

/// A loopback port free for TCP (for the control endpoint).
pub fn free_tcp_port() -> u16 {
    next_port(|port| TcpListener::bind(("127.0.0.1", port)).is_ok())
}

/// The next port of this process's cursor that `free` accepts.
fn next_port(free: impl Fn(u16) -> bool) -> u16 {
    let (low, span) = candidate_range();
    for _ in 0..span {
        let port = (low + cursor().fetch_add(1, Ordering::Relaxed) % span) as u16;
        if free(port) {
            return port;
        }
    }
    panic!("no free loopback port in {low}..{}", low + span);
}

/// This process's cursor, started at a point of its own (process id and
/// clock), so that test processes side by side walk different stretches.
fn cursor() -> &'static AtomicU32 {
    static CURSOR: OnceLock<AtomicU32> = OnceLock::new();
    CURSOR.get_or_init(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        AtomicU32::new(std::process::id().wrapping_mul(7_919) ^ nanos)
    })
}

/// (lowest port, how many) of the stretch below the ephemeral range.
fn candidate_range() -> (u32, u32) {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    if ephemeral_low > LOWEST + 1_000 {
        (LOWEST, ephemeral_low - LOWEST)
    } else {
        // An unusual range reaching down here: use the stretch above it.
        let high = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .ok()
            .and_then(|text| text.split_whitespace().nth(1)?.parse::<u32>().ok())
            .unwrap_or(60_999);
        (high + 1, 65_535 - high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_outside_the_ephemeral_range_and_not_repeated() {
        let (low, span) = candidate_range();
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        for &port in &ports {
            assert!((low..low + span).contains(&u32::from(port)), "{port}");
        }
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "a port was handed out twice");
    }

    #[test]
    fn a_port_refused_is_passed_over() {
        let tried = std::cell::RefCell::new(Vec::new());
        let port = next_port(|port| {
            tried.borrow_mut().push(port);
            tried.borrow().len() > 3
        });
        let tried = tried.into_inner();
        assert_eq!(tried.len(), 4);
        assert_eq!(port, tried[3]);
        assert!(!tried[..3].contains(&port));
    }
}
