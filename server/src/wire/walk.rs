//! Walking messages the server did not build: names (compressed or not)
//! and the resource records of every section, for the code that reads or
//! patches a received message (query parsing, TSIG, UPDATE, TTL caps,
//! EDE). One walker, so that every reader agrees on what is well formed.
//!
//! ```text
//!  name at `at` ─► follow_name: labels, pointers backwards only, ≤ 64 hops,
//!                  ≤ 255 octets ─► read_name (a Name) | name_end (no copy)
//!  message ─► records(msg): header counts, question(s) skipped
//!     ─► RecordAt per record { start, owner_end, rtype, class, ttl,
//!                               rdata range, part }
//!     a name or length running past the end ─► Err(Unwalkable), then done
//!  Records::end(): where the last record read ends (msg.len() when whole)
//! ```

use super::HEADER_LEN;
use dns::name::MAX_NAME_LEN;
use dns::Name;
use std::ops::Range;

/// The big-endian 16-bit word at `at`, if the message is long enough.
pub fn u16_at(p: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*p.get(at)?, *p.get(at + 1)?]))
}

/// Follows the possibly compressed name at `at`, calling `label` with each
/// label in order; returns the offset after the name where it stands.
/// Pointers must go backwards (a hop limit stops loops anyway) and the
/// name must fit in 255 octets.
fn follow_name<'a>(packet: &'a [u8], at: usize, mut label: impl FnMut(&'a [u8])) -> Option<usize> {
    let mut pos = at;
    let mut end = None;
    let mut hops = 0;
    let mut total = 1;
    loop {
        let len = usize::from(*packet.get(pos)?);
        match len & 0xC0 {
            0x00 if len == 0 => return Some(end.unwrap_or(pos + 1)),
            0x00 => {
                total += 1 + len;
                if total > MAX_NAME_LEN {
                    return None;
                }
                label(packet.get(pos + 1..pos + 1 + len)?);
                pos += 1 + len;
            }
            0xC0 => {
                let target = usize::from(u16_at(packet, pos)? & 0x3FFF);
                end.get_or_insert(pos + 2);
                hops += 1;
                if hops > 64 || target >= pos {
                    return None;
                }
                pos = target;
            }
            _ => return None,
        }
    }
}

/// Reads a possibly compressed name at `at`; returns it and the offset after it.
pub fn read_name(packet: &[u8], at: usize) -> Option<(Name, usize)> {
    let mut labels: Vec<&[u8]> = Vec::with_capacity(8);
    let end = follow_name(packet, at, |l| labels.push(l))?;
    let name = Name::from_labels(labels).ok()?;
    Some((name, end))
}

/// The offset after the possibly compressed name at `at`, checked as
/// [`read_name`] checks it, without building the name.
pub fn name_end(packet: &[u8], at: usize) -> Option<usize> {
    follow_name(packet, at, |_| {})
}

/// The offset after the uncompressed name at `at`: labels only, no
/// pointer (a question echoed verbatim must be one).
pub fn plain_name_end(packet: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = usize::from(*packet.get(at)?);
        if len > 63 {
            return None;
        }
        at += 1 + len;
        if len == 0 {
            return Some(at);
        }
    }
}

/// The section a record stands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The answer section (UPDATE: prerequisites).
    Answer,
    /// The authority section (UPDATE: the updates).
    Authority,
    /// The additional section.
    Additional,
}

/// Where one resource record lies in a message, and its fixed fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordAt {
    /// Offset of its owner name.
    pub start: usize,
    /// Offset after its owner name: TYPE, CLASS, TTL, RDLENGTH follow.
    pub owner_end: usize,
    /// TYPE.
    pub rtype: u16,
    /// CLASS (for OPT, the requester's UDP size).
    pub class: u16,
    /// TTL (for OPT, extended rcode, version and flags).
    pub ttl: u32,
    /// Its rdata, within the message.
    pub rdata: Range<usize>,
    /// The section it stands in.
    pub part: Part,
}

impl RecordAt {
    /// Offset of its TTL field.
    pub fn ttl_at(&self) -> usize {
        self.owner_end + 4
    }

    /// Offset of its RDLENGTH field.
    pub fn rdlength_at(&self) -> usize {
        self.owner_end + 8
    }
}

/// A record's owner or length ran past the end of the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwalkable;

/// The records of a message, in order; see [`records`].
pub struct Records<'a> {
    msg: &'a [u8],
    pos: usize,
    index: u32,
    answer: u32,
    authority: u32,
    total: u32,
    failed: bool,
}

/// Walks the records of `msg` after its question section (whose names are
/// checked as any other); an error when the header or a question is cut.
pub fn records(msg: &[u8]) -> Result<Records<'_>, Unwalkable> {
    let count = |at| u16_at(msg, at).map(u32::from).ok_or(Unwalkable);
    let mut pos = HEADER_LEN;
    for _ in 0..count(4)? {
        pos = name_end(msg, pos).ok_or(Unwalkable)? + 4;
    }
    Ok(records_from(msg, pos, [count(6)?, count(8)?, count(10)?]))
}

/// Walks `counts` (answer, authority, additional) records of `msg` from
/// `pos`, where the question section ends.
pub fn records_from(msg: &[u8], pos: usize, counts: [u32; 3]) -> Records<'_> {
    let [answer, authority, additional] = counts;
    Records {
        msg,
        pos,
        index: 0,
        answer,
        authority: answer + authority,
        total: answer + authority + additional,
        failed: false,
    }
}

impl Records<'_> {
    /// Where the last record read ends (or the question section, before
    /// any); a whole message ends there.
    pub fn end(&self) -> usize {
        self.pos
    }

    fn part(&self) -> Part {
        if self.index < self.answer {
            Part::Answer
        } else if self.index < self.authority {
            Part::Authority
        } else {
            Part::Additional
        }
    }

    fn read(&self) -> Option<RecordAt> {
        let p = self.msg;
        let owner_end = name_end(p, self.pos)?;
        let word = |off: usize| u16_at(p, owner_end + off);
        let ttl = u32::from(word(4)?) << 16 | u32::from(word(6)?);
        let rdata = owner_end + 10..owner_end + 10 + usize::from(word(8)?);
        if rdata.end > p.len() {
            return None;
        }
        Some(RecordAt {
            start: self.pos,
            owner_end,
            rtype: word(0)?,
            class: word(2)?,
            ttl,
            rdata,
            part: self.part(),
        })
    }
}

impl Iterator for Records<'_> {
    type Item = Result<RecordAt, Unwalkable>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.index >= self.total {
            return None;
        }
        let Some(record) = self.read() else {
            self.failed = true;
            return Some(Err(Unwalkable));
        };
        self.pos = record.rdata.end;
        self.index += 1;
        Some(Ok(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply to `www.example. A`: one answer (owner compressed), one OPT.
    fn reply() -> Vec<u8> {
        let mut p = vec![0, 1, 0x84, 0, 0, 1, 0, 1, 0, 0, 0, 1];
        p.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
        p.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 1, 2, 3, 4]);
        p.extend_from_slice(&[0, 0, 41, 4, 0xD0, 0, 0, 0x80, 0, 0, 0]);
        p
    }

    #[test]
    fn records_are_found_with_their_sections_and_fields() {
        let p = reply();
        let mut walk = records(&p).unwrap();
        let a = walk.next().unwrap().unwrap();
        assert_eq!((a.start, a.owner_end, a.rtype, a.ttl), (29, 31, 1, 60));
        assert_eq!((a.rdata.clone(), a.part), (41..45, Part::Answer));
        let opt = walk.next().unwrap().unwrap();
        assert_eq!(
            (opt.rtype, opt.class, opt.part),
            (41, 1232, Part::Additional)
        );
        assert_eq!(opt.ttl & 0x8000, 0x8000);
        assert!(walk.next().is_none());
        assert_eq!(walk.end(), p.len());
    }

    #[test]
    fn a_cut_record_ends_the_walk_with_an_error() {
        let p = reply();
        let cut = &p[..p.len() - 3];
        let results: Vec<_> = records(cut).unwrap().collect();
        assert_eq!(results.len(), 2);
        assert_eq!(results[1], Err(Unwalkable));
        assert!(records(&p[..20]).is_err(), "a cut question");
    }

    #[test]
    fn names_follow_backward_pointers_only() {
        let p = reply();
        let (name, end) = read_name(&p, 29).unwrap();
        assert_eq!((name.to_string().as_str(), end), ("www.example.", 31));
        assert_eq!(name_end(&p, 12), Some(25));
        let mut forward = p.clone();
        forward[29..31].copy_from_slice(&[0xC0, 40]);
        assert_eq!(name_end(&forward, 29), None);
        let mut looped = p.clone();
        looped[29..31].copy_from_slice(&[0xC0, 29]);
        assert_eq!(read_name(&looped, 29), None);
    }

    #[test]
    fn names_over_255_octets_are_refused() {
        let mut p = Vec::new();
        for _ in 0..4 {
            p.push(63);
            p.extend_from_slice(&[b'a'; 63]);
        }
        p.push(0);
        assert_eq!(name_end(&p, 0), None);
        let ok = &p[64..];
        assert_eq!(name_end(ok, 0), Some(ok.len()));
    }
}
