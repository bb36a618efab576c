//! One answering thread's ring: a single-producer single-consumer queue of
//! 64-bit words that the thread fills and the writer empties.
//!
//! ```text
//!  answering thread (producer)              writer thread (consumer)
//!  write() records after its own tail  ─┐
//!  publish(tail): one release store     ├─► consume(read): sees [head, tail) in
//!  full? re-read head once, else drop  ─┘   place (two slices when it wraps),
//!                                            frees what `read` used: one release
//!                                            store of head
//! ```
//!
//! Head and tail sit on cache lines of their own; the words are reused in
//! place, so the memory the answer path writes stays in the cache.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Ring words (8 bytes) per line of `query_log_buffer`: a record of an IPv4
/// query for a 20-byte name takes 6.
const WORDS_PER_LINE: usize = 8;
/// The smallest ring holds the longest record (37 words) with room to spare.
const MIN_WORDS: usize = 64;

/// A value on a cache line of its own (two lines: the adjacent-line
/// prefetcher pairs them).
#[repr(align(128))]
pub(super) struct Padded<T>(pub(super) T);

/// One answering thread's queue of encoded records: 64-bit words written
/// by that thread only (`tail`), read by the writer only (`head`). Both
/// count words since the start; a word's place is the count modulo the
/// ring's size (a power of two). Records are whole words and may wrap.
pub(super) struct Ring {
    /// The words, reused in place.
    words: Box<[AtomicU64]>,
    mask: u64,
    /// Words the thread has published (written only by the thread).
    pub(super) tail: Padded<AtomicU64>,
    /// Words the writer has consumed (written only by the writer).
    pub(super) head: Padded<AtomicU64>,
    /// Set when the thread exits: the writer forgets the ring once drained.
    pub(super) abandoned: AtomicBool,
}

impl Ring {
    /// A ring with room for about `lines` records.
    pub(super) fn new(lines: usize) -> Ring {
        let size = lines
            .saturating_mul(WORDS_PER_LINE)
            .max(MIN_WORDS)
            .next_power_of_two();
        Ring {
            words: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size as u64 - 1,
            tail: Padded(AtomicU64::new(0)),
            head: Padded(AtomicU64::new(0)),
            abandoned: AtomicBool::new(false),
        }
    }

    /// Words the ring holds (a power of two).
    pub(super) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Appends `record` (whole words) after `*tail`, the thread's own copy
    /// of the tail, without publishing it ([`Ring::publish`] does); `*head`
    /// is its last sight of the writer's head, read again only when the ring
    /// looks full. False when it does not fit. Producer side: only the
    /// owning thread calls this.
    #[inline]
    pub(super) fn write(&self, tail: &mut u64, head: &mut u64, record: &[u8]) -> bool {
        let n = (record.len() / 8) as u64;
        if *tail + n - *head > self.capacity() {
            *head = self.head.0.load(Ordering::Acquire);
            if *tail + n - *head > self.capacity() {
                return false;
            }
        }
        for (i, word) in record.chunks_exact(8).enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            // Native byte order: the writer reads the words' memory as bytes.
            self.words[((*tail + i as u64) & self.mask) as usize]
                .store(u64::from_ne_bytes(w), Ordering::Relaxed);
        }
        *tail += n;
        true
    }

    /// Hands every word written up to `tail` to the writer (one release
    /// store). Producer side.
    #[inline]
    pub(super) fn publish(&self, tail: u64) {
        self.tail.0.store(tail, Ordering::Release);
    }

    /// [`Ring::write`] and [`Ring::publish`] for one record.
    #[cfg(test)]
    pub(super) fn push(&self, tail: &mut u64, head: &mut u64, record: &[u8]) -> bool {
        let ok = self.write(tail, head, record);
        self.publish(*tail);
        ok
    }

    /// Shows every published word to `read` as bytes, in place (one slice,
    /// or two when they wrap past the ring's end), then frees the first
    /// bytes it says it used (whole words; the rest stays for the next
    /// call); returns the number of words freed. Consumer side: only the
    /// writer calls this.
    pub(super) fn consume(&self, read: impl FnOnce(&[u8], &[u8]) -> usize) -> u64 {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if tail == head {
            return 0;
        }
        let from = (head & self.mask) as usize;
        let to = (tail & self.mask) as usize;
        let (first, second) = if from < to {
            (from..to, 0..0)
        } else {
            (from..self.words.len(), 0..to)
        };
        let bytes = |r: std::ops::Range<usize>| {
            let words = &self.words[r];
            // SAFETY: `AtomicU64` has the size and layout of `u64`. These
            // words lie in [head, tail): the producer published them with
            // the release store of `tail` (acquired above) and writes them
            // again only after the release store of `head` below, which
            // comes after `read` returns; the slices cannot outlive `read`.
            unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) }
        };
        let used = (read(bytes(first), bytes(second)) / 8) as u64;
        debug_assert!(used <= tail - head);
        if used > 0 {
            self.head.0.store(head + used, Ordering::Release);
        }
        used
    }

    /// True when the writer has consumed every published word.
    pub(super) fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::querylog::record::{decode, encode, MAX_RECORD};
    use crate::querylog::tests::{drain, query};
    use std::net::IpAddr;
    use std::sync::Arc;

    #[test]
    fn a_ring_holds_what_fits_wraps_around_and_never_grows() {
        let q = query(b"\x03www\x07example\x03com\x00", 1, None);
        let mut rec = [0u8; MAX_RECORD];
        let len = encode(&mut rec, &q, None, "192.0.2.1:1".parse().unwrap(), false, 1);
        // 20 + 4 + 17 bytes: 6 words.
        assert_eq!(len, 48);
        let ring = Ring::new(8);
        assert_eq!(ring.capacity(), 64);
        let (mut tail, mut head) = (0, 0);
        for _ in 0..10 {
            assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        }
        assert!(
            !ring.push(&mut tail, &mut head, &rec[..len]),
            "the 11th line"
        );
        assert_eq!(tail, 60);
        // The writer takes all ten; the thread sees the room only when it
        // looks full, and the next records wrap past the end.
        let mut bytes = Vec::new();
        assert_eq!(drain(&ring, &mut bytes), 60);
        assert_eq!(
            head, 0,
            "the thread's view of the head is stale until needed"
        );
        for i in 0..10u64 {
            let mut r = rec;
            r[0..8].copy_from_slice(&(100 + i).to_le_bytes());
            assert!(ring.push(&mut tail, &mut head, &r[..len]), "line {i}");
        }
        assert_eq!(head, 60);
        assert!(!ring.is_empty());
        bytes.clear();
        assert_eq!(drain(&ring, &mut bytes), 60);
        assert!(ring.is_empty());
        let mut at = 0;
        for i in 0..10u64 {
            let (record, used) = decode(&bytes[at..]);
            assert_eq!(record.unix_us, 100 + i);
            assert_eq!(record.name, b"\x03www\x07example\x03com\x00");
            at += used;
        }
        assert_eq!(at, bytes.len());
        assert_eq!(ring.words.len(), 64);
        // The longest name (255 bytes on the wire) fits the smallest ring.
        let mut long = Vec::new();
        for len in [63u8, 63, 63, 61] {
            long.push(len);
            long.extend(std::iter::repeat_n(b'a', usize::from(len)));
        }
        long.push(0);
        let q = query(&long, 1, None);
        let peer = "[2001:db8::1]:53".parse().unwrap();
        let len = encode(&mut rec, &q, None, peer, false, 1);
        assert_eq!(len, MAX_RECORD);
        let ring = Ring::new(1);
        let (mut tail, mut head) = (0, 0);
        assert!(ring.push(&mut tail, &mut head, &rec[..len]));
        assert!(!ring.push(&mut tail, &mut head, &rec[..len]));
        bytes.clear();
        drain(&ring, &mut bytes);
        let (record, _) = decode(&bytes);
        assert_eq!(record.name, &long[..]);
        assert_eq!(record.addr, "2001:db8::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn a_ring_passes_every_record_between_two_threads() {
        // One producer, one consumer, far more records than the ring holds.
        let ring = Arc::new(Ring::new(4));
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                let (mut tail, mut head) = (0, 0);
                let mut i = 0u64;
                while i < 100_000 {
                    let mut r = [0u8; 24];
                    r[0..8].copy_from_slice(&i.to_le_bytes());
                    r[8..16].copy_from_slice(&(!i).to_le_bytes());
                    r[16..24].copy_from_slice(&i.wrapping_mul(7).to_le_bytes());
                    if ring.push(&mut tail, &mut head, &r) {
                        i += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        };
        let mut next = 0u64;
        let mut bytes = Vec::new();
        while next < 100_000 {
            bytes.clear();
            drain(&ring, &mut bytes);
            assert_eq!(bytes.len() % 24, 0);
            for r in bytes.chunks_exact(24) {
                let word = |k: usize| u64::from_le_bytes(r[k * 8..k * 8 + 8].try_into().unwrap());
                assert_eq!(
                    (word(0), word(1), word(2)),
                    (next, !next, next.wrapping_mul(7))
                );
                next += 1;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
        assert!(ring.is_empty());
    }
}
