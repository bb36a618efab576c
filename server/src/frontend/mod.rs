//! Sockets and framing; no DNS logic lives here.
//!
//! ```text
//!  UDP: one SO_REUSEPORT socket per worker (datagrams spread among them
//!       at random, spread.rs) ─► recvmmsg (a batch) ─► cache
//!       hits answered in the loop, sendmmsg ─ misses ─► task: respond ─► send_to
//!  TCP: accept ─► a slot (slots.rs; whom a newcomer evicts when all are
//!       taken: evict.rs) ─► per connection: read 2-byte-framed
//!       queries, answer each in its own task, write replies as they finish
//!       (out of order, RFC 7766 §6.2.1.1), close when idle; a zone
//!       transfer's messages are written back to back as they are built
//! ```

#[cfg(target_os = "linux")]
pub mod evict;
pub mod mmsg;
pub mod slots;
pub mod spread;
pub mod tcp;
pub mod udp;
mod udp_lanes;
mod udp_miss;
mod udp_portable;
#[cfg(target_os = "linux")]
mod udp_thread;
