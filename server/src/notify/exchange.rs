//! One NOTIFY delivered to one secondary over UDP, with retries.
//!
//! ```text
//!  deliver(target, apex, soa, sending):
//!     socket (same family, ephemeral port, from --notify-source if set,
//!     connected to the target)
//!     message: fresh random ID, TSIG-signed when the target has a key
//!     attempt 1..=retry.attempts: send ─► wait (first_wait, doubling)
//!        matching NOERROR reply ─► Acknowledged
//!        matching error reply    ─► Rejected(rcode) (no more tries)
//!        anything else, or to a signed NOTIFY a reply without a valid
//!        TSIG by its key (tsig/reply.rs) ─► ignored, keep waiting
//!     no reply after the last ─► NoReply
//! ```
//!
//! Replies are matched by ID, QR and opcode (RFC 1996 §4.7); a forged
//! unsigned reply cannot stop the retries of a signed NOTIFY.

use super::counters::{bump, NOTIFY};
use super::message::{judge_reply, notify_message, Judged, SoaHint};
use super::target::Target;
use crate::tsig::{self, TsigKey};
use dns::Name;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// How often, how patiently and from where a NOTIFY is sent.
#[derive(Clone, Copy, Debug)]
pub struct Sending {
    /// Datagrams sent at most (the first and the retries).
    pub attempts: u32,
    /// Wait for a reply after the first; each retry waits twice as long.
    pub first_wait: Duration,
    /// The address NOTIFYs leave from (`--notify-source`; secondaries'
    /// ACLs check it); `None`: the kernel picks one.
    pub source: Option<IpAddr>,
}

/// How a delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Acknowledged after this many datagrams.
    Acknowledged(u32),
    /// The secondary answered this error rcode.
    Rejected(u8),
    /// No reply to any attempt (or no socket).
    NoReply,
}

/// Sends the NOTIFY for `apex` to `target` until it is answered or the
/// retries run out; counts what happened in [`NOTIFY`].
pub async fn deliver(
    target: &Target,
    apex: &Name,
    soa: Option<&SoaHint>,
    retry: Sending,
) -> Delivery {
    let outcome = match connect(target.addr, retry.source).await {
        Ok(socket) => attempts(&socket, target, apex, soa, retry).await,
        Err(e) => {
            tracing::warn!(target = %target.addr, zone = %apex, error = %e, "NOTIFY: no socket");
            Delivery::NoReply
        }
    };
    match outcome {
        Delivery::Acknowledged(_) => bump(&NOTIFY.acknowledged),
        _ => bump(&NOTIFY.failed),
    }
    outcome
}

async fn connect(addr: SocketAddr, source: Option<IpAddr>) -> std::io::Result<UdpSocket> {
    let any = match addr {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let local = SocketAddr::new(source.unwrap_or(any), 0);
    let socket = UdpSocket::bind(local).await?;
    socket.connect(addr).await?;
    Ok(socket)
}

async fn attempts(
    socket: &UdpSocket,
    target: &Target,
    apex: &Name,
    soa: Option<&SoaHint>,
    retry: Sending,
) -> Delivery {
    let id = random_id();
    let mut message = notify_message(id, apex, soa);
    let signed = target.key.as_ref().map(|key| {
        let mac = tsig::sign_request(&mut message, key, tsig::unix_now());
        (key, mac)
    });
    let mut wait = retry.first_wait;
    for attempt in 1..=retry.attempts.max(1) {
        if socket.send(&message).await.is_ok() {
            bump(&NOTIFY.sent);
        }
        let signed = signed.as_ref().map(|(key, mac)| (*key, mac.as_slice()));
        match await_reply(socket, id, signed, wait).await {
            Some(Judged::Acknowledged) => return Delivery::Acknowledged(attempt),
            Some(Judged::Rejected(rcode)) => return Delivery::Rejected(rcode),
            _ => wait = wait.saturating_mul(2),
        }
    }
    Delivery::NoReply
}

/// The first reply to our NOTIFY within `wait`, other datagrams skipped;
/// to a signed NOTIFY only a reply signed with its key counts.
async fn await_reply(
    socket: &UdpSocket,
    id: u16,
    signed: Option<(&TsigKey, &[u8])>,
    wait: Duration,
) -> Option<Judged> {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        // A refused port (ICMP) is an error here: wait out the attempt.
        match tokio::time::timeout(left, socket.recv(&mut buf)).await {
            Ok(Ok(n)) => match judge_reply(&buf[..n], id) {
                Judged::NotOurs => continue,
                _ if !signed_by(&buf[..n], signed) => continue,
                judged => return Some(judged),
            },
            Ok(Err(_)) => tokio::time::sleep(left.min(Duration::from_millis(50))).await,
            Err(_) => return None,
        }
    }
}

/// True when the NOTIFY was unsigned, or `reply` is signed with its key.
fn signed_by(reply: &[u8], signed: Option<(&TsigKey, &[u8])>) -> bool {
    match signed {
        None => true,
        Some((key, mac)) => tsig::reply_is_signed(reply, key, mac, tsig::unix_now()),
    }
}

fn random_id() -> u16 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 2];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    u16::from_be_bytes(bytes)
}
