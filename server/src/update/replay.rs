//! Signed UPDATEs seen lately, so that a captured one replayed within its
//! fudge is not applied again.
//!
//! ```text
//!  verified request ─► (key name, request MAC) seen in the last 600 s?
//!     no ─► New(ticket): apply, then ticket.answered(reply) keeps the reply
//!     being applied ─► InFlight: no reply (the client asks again)
//!     answered ─► Answered(reply): the first reply, byte for byte
//!     600 s of entries at the cap (65,536) ─► Full: REFUSED
//!  a ticket dropped unanswered (the update cancelled) forgets the request
//! ```
//!
//! A request is accepted while its signed time is within 300 s of ours
//! (`tsig::MAX_FUDGE`), so it can be accepted at most 600 s apart: that is
//! how long a MAC is kept. A client retransmitting (its reply lost) gets
//! the same reply as the first time; an attacker replaying gets nothing new.

use crate::tsig::MAX_FUDGE;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a request's MAC is remembered.
pub const REMEMBERED: Duration = Duration::from_secs(2 * MAX_FUDGE as u64);

/// Most requests remembered at once.
pub const MAX_REMEMBERED: usize = 65_536;

/// Requests seen: the key name's wire form followed by the request MAC.
type Seen = HashMap<Vec<u8>, Entry>;

struct Entry {
    since: Instant,
    /// The reply, once the request was answered.
    reply: Option<Vec<u8>>,
}

/// The signed UPDATEs of the last [`REMEMBERED`].
#[derive(Clone, Default)]
pub struct Replays {
    seen: Arc<Mutex<Seen>>,
}

/// What a request is, seen from here.
pub enum Sight {
    /// First seen: apply it and hand the reply to the ticket.
    New(Ticket),
    /// The same request is being applied now.
    InFlight,
    /// Answered before: this reply.
    Answered(Vec<u8>),
    /// Too many requests remembered to take another.
    Full,
}

/// A request being applied; dropped unanswered, it is forgotten.
pub struct Ticket {
    seen: Arc<Mutex<Seen>>,
    id: Vec<u8>,
    answered: bool,
}

impl Replays {
    /// Judges the request signed by `key` (its name's wire form) with
    /// `mac`, at `now`.
    pub fn sight(&self, key: &[u8], mac: &[u8], now: Instant) -> Sight {
        let id = [key, mac].concat();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = seen.get(&id) {
            if now.duration_since(entry.since) < REMEMBERED {
                return match &entry.reply {
                    Some(reply) => Sight::Answered(reply.clone()),
                    None => Sight::InFlight,
                };
            }
        }
        if seen.len() >= MAX_REMEMBERED {
            seen.retain(|_, e| now.duration_since(e.since) < REMEMBERED);
            if seen.len() >= MAX_REMEMBERED {
                return Sight::Full;
            }
        }
        let entry = Entry {
            since: now,
            reply: None,
        };
        seen.insert(id.clone(), entry);
        Sight::New(Ticket {
            seen: self.seen.clone(),
            id,
            answered: false,
        })
    }
}

impl Ticket {
    /// Keeps `reply` as the answer to every replay of the request.
    pub fn answered(mut self, reply: &[u8]) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = seen.get_mut(&self.id) {
            entry.reply = Some(reply.to_vec());
        }
        self.answered = true;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.answered {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_applied_once_and_its_reply_kept() {
        let replays = Replays::default();
        let t0 = Instant::now();
        let Sight::New(ticket) = replays.sight(b"k", b"mac1", t0) else {
            panic!("first sight");
        };
        assert!(matches!(replays.sight(b"k", b"mac1", t0), Sight::InFlight));
        ticket.answered(b"reply");
        match replays.sight(b"k", b"mac1", t0 + Duration::from_secs(599)) {
            Sight::Answered(r) => assert_eq!(r, b"reply"),
            _ => panic!("the kept reply"),
        }
        // Another key with the same MAC bytes is another request.
        assert!(matches!(replays.sight(b"j", b"mac1", t0), Sight::New(_)));
        // Past the window the request is new again (it no longer verifies).
        let later = t0 + REMEMBERED;
        assert!(matches!(replays.sight(b"k", b"mac1", later), Sight::New(_)));
    }

    #[test]
    fn a_cancelled_request_is_forgotten() {
        let replays = Replays::default();
        let t0 = Instant::now();
        drop(replays.sight(b"k", b"mac", t0));
        assert!(matches!(replays.sight(b"k", b"mac", t0), Sight::New(_)));
    }
}
