//! The outstanding queries of one client: IDs, send times, deadlines.
//!
//! ```text
//!  open ─► an ID reused least-recently-freed first, its send time, its deadline
//!  close(reply) ─► matched by ID and question ─► latency (to the kernel's stamp)
//!  expire(now) ─► past their deadline, oldest first ─► lost
//! ```

use super::queries::Queries;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Clone, Copy)]
pub(super) struct Slot {
    /// Sequence number of the query in it; 0 when free.
    seq: u64,
    sent: Instant,
    /// The send time on CLOCK_REALTIME, to compare with kernel stamps.
    sent_real: u64,
    query: u32,
}

/// The outstanding queries of one client.
pub(super) struct Window {
    slots: Vec<Slot>,
    free: VecDeque<u16>,
    /// (id, seq, deadline) in send order.
    order: VecDeque<(u16, u64, Instant)>,
    pub(super) outstanding: usize,
    next_seq: u64,
}

impl Window {
    pub(super) fn new(now: Instant, salt: usize) -> Window {
        let start = (salt as u32).wrapping_mul(40503) as u16;
        Window {
            slots: vec![
                Slot {
                    seq: 0,
                    sent: now,
                    sent_real: 0,
                    query: 0
                };
                65536
            ],
            free: (0..=u16::MAX).map(|i| i.wrapping_add(start)).collect(),
            order: VecDeque::new(),
            outstanding: 0,
            next_seq: 1,
        }
    }

    pub(super) fn open(
        &mut self,
        query: usize,
        now: Instant,
        now_real: u64,
        timeout: Duration,
    ) -> u16 {
        let id = self.free.pop_front().expect("window smaller than 65536");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.slots[id as usize] = Slot {
            seq,
            sent: now,
            sent_real: now_real,
            query: query as u32,
        };
        self.order.push_back((id, seq, now + timeout));
        self.outstanding += 1;
        id
    }

    /// The reply `reply` was read at `now` (and arrived at `arrived`, a
    /// kernel stamp on CLOCK_REALTIME, when there is one): returns the
    /// latency when it matches, measured to the arrival when stamped.
    pub(super) fn close(
        &mut self,
        reply: &[u8],
        queries: &Queries,
        now: Instant,
        arrived: Option<u64>,
    ) -> Option<Duration> {
        if reply.len() < 12 || reply[2] & 0x80 == 0 {
            return None;
        }
        let id = u16::from_be_bytes([reply[0], reply[1]]);
        let slot = self.slots[id as usize];
        if slot.seq == 0 {
            return None;
        }
        let q = slot.query as usize;
        let qdcount = u16::from_be_bytes([reply[4], reply[5]]);
        if qdcount != 0 {
            let end = queries.question_end[q] as usize;
            let want = &queries.messages[q][12..end];
            let got = reply.get(12..end)?;
            if !want.eq_ignore_ascii_case(got) {
                return None;
            }
        }
        self.slots[id as usize].seq = 0;
        self.free.push_back(id);
        self.outstanding -= 1;
        match arrived {
            // A stamp before the send means the wall clock was stepped.
            Some(at) if at >= slot.sent_real => Some(Duration::from_nanos(at - slot.sent_real)),
            _ => Some(now - slot.sent),
        }
    }

    /// Frees queries past their deadline; returns how many were lost.
    pub(super) fn expire(&mut self, now: Instant) -> u64 {
        let mut lost = 0;
        while let Some(&(id, seq, deadline)) = self.order.front() {
            if self.slots[id as usize].seq != seq {
                self.order.pop_front();
                continue;
            }
            if deadline > now {
                break;
            }
            self.order.pop_front();
            self.slots[id as usize].seq = 0;
            self.free.push_back(id);
            self.outstanding -= 1;
            lost += 1;
        }
        lost
    }

    /// Counts every outstanding query as lost (a TCP connection broke).
    pub(super) fn drop_all(&mut self) -> u64 {
        let lost = self.outstanding as u64;
        for (id, seq, _) in self.order.drain(..) {
            if self.slots[id as usize].seq == seq {
                self.slots[id as usize].seq = 0;
                self.free.push_back(id);
            }
        }
        self.outstanding = 0;
        lost
    }

    pub(super) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(&(id, seq, deadline)) = self.order.front() {
            if self.slots[id as usize].seq == seq {
                return Some(deadline);
            }
            self.order.pop_front();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::QueryOptions;

    #[test]
    fn window_matches_ids_and_expires_in_order() {
        let queries =
            Queries::parse("a.example A\nb.example A\n", QueryOptions::default()).unwrap();
        let t0 = Instant::now();
        let mut w = Window::new(t0, 0);
        let id0 = w.open(0, t0, 5_000_000, Duration::from_secs(1));
        let id1 = w.open(1, t0, 5_000_000, Duration::from_secs(1));
        let mut reply = queries.messages[1].to_vec();
        reply[..2].copy_from_slice(&id1.to_be_bytes());
        reply[2] |= 0x80;
        // Wrong question for that id: ignored.
        let mut wrong = queries.messages[0].to_vec();
        wrong[..2].copy_from_slice(&id1.to_be_bytes());
        wrong[2] |= 0x80;
        assert!(w.close(&wrong, &queries, t0, None).is_none());
        // A kernel stamp wins over the (later) read time.
        assert_eq!(
            w.close(
                &reply,
                &queries,
                t0 + Duration::from_millis(3),
                Some(5_250_000)
            ),
            Some(Duration::from_micros(250))
        );
        assert!(
            w.close(&reply, &queries, t0, None).is_none(),
            "counted twice"
        );
        assert_eq!(w.outstanding, 1);
        // A stamp before the send (clock stepped back): the read time.
        let mut reply0 = queries.messages[0].to_vec();
        reply0[..2].copy_from_slice(&id0.to_be_bytes());
        reply0[2] |= 0x80;
        let id2 = w.open(0, t0, 9_000_000, Duration::from_secs(1));
        reply0[..2].copy_from_slice(&id2.to_be_bytes());
        assert_eq!(
            w.close(
                &reply0,
                &queries,
                t0 + Duration::from_millis(2),
                Some(1_000)
            ),
            Some(Duration::from_millis(2))
        );
        assert_eq!(w.outstanding, 1);
        assert_eq!(w.expire(t0 + Duration::from_millis(999)), 0);
        assert_eq!(w.expire(t0 + Duration::from_secs(1)), 1);
        assert_eq!(w.outstanding, 0);
        let _ = id0;
    }
}
