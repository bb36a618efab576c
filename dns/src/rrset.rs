//! One RRset as mongodns holds it: a type, one TTL, and each record's rdata
//! in uncompressed wire format.
//!
//! ```text
//!  RRset { rtype: MX, ttl: 300, rdata: [wire bytes, …] }
//!     stored by backend-mongo (docs/schema.md), edited by edit.rs
//!  message_octets ─► over MAX_RRSET_OCTETS? ─► refused by every writer
//! ```

use crate::RType;

/// The most octets an RRset's records may take in a DNS message: 65,535
/// less a header (12) and the longest question (a 255-octet name, type
/// and class: 259). An answer never splits an RRset, so one larger than
/// this could not be sent whole in any message: every writer refuses it.
/// Each record counts as [`record_octets`]: 4,079 A records, 2,330 AAAA.
pub const MAX_RRSET_OCTETS: usize = 65_535 - 12 - 259;

/// The octets one record of `rdata_len` octets takes in a message: its
/// owner as a compression pointer (2), type, class, TTL and RDLENGTH (10),
/// its rdata.
pub fn record_octets(rdata_len: usize) -> usize {
    12 + rdata_len
}

/// One RRset: TTL and rdata in uncompressed wire format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RRset {
    /// The record type.
    pub rtype: RType,
    /// TTL in seconds.
    pub ttl: u32,
    /// Each record's rdata, uncompressed wire format.
    pub rdata: Vec<Box<[u8]>>,
}

impl RRset {
    /// An RRset of these records (each rdata copied).
    pub fn of(rtype: RType, ttl: u32, rdata: &[&[u8]]) -> RRset {
        RRset {
            rtype,
            ttl,
            rdata: rdata.iter().map(|r| Box::<[u8]>::from(*r)).collect(),
        }
    }

    /// The octets its records take in a message ([`record_octets`] each).
    pub fn message_octets(&self) -> usize {
        self.rdata.iter().map(|rd| record_octets(rd.len())).sum()
    }

    /// Why `owner`'s RRset is refused, when it is over [`MAX_RRSET_OCTETS`].
    pub fn too_large(&self, owner: &crate::Name) -> Option<String> {
        let octets = self.message_octets();
        (octets > MAX_RRSET_OCTETS).then(|| too_large_text(owner, self.rtype, octets))
    }

    /// True when it holds the record `rd`.
    pub fn contains(&self, rd: &[u8]) -> bool {
        self.rdata.iter().any(|r| r[..] == *rd)
    }
}

/// The refusal of an RRset of `octets` octets at `owner`, for every writer.
pub fn too_large_text(owner: &crate::Name, rtype: RType, octets: usize) -> String {
    format!(
        "the {owner} {rtype} RRset would take {octets} octets in a DNS message, \
         over the {MAX_RRSET_OCTETS} one message can hold for it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_what_one_message_holds_after_the_longest_question() {
        let a = |n: usize| RRset {
            rtype: RType::A,
            ttl: 60,
            rdata: (0..n).map(|_| vec![0u8; 4].into_boxed_slice()).collect(),
        };
        let owner: crate::Name = "big.example.".parse().unwrap();
        assert_eq!(a(4079).message_octets(), MAX_RRSET_OCTETS);
        assert!(a(4079).too_large(&owner).is_none());
        let why = a(4080).too_large(&owner).unwrap();
        assert!(why.contains("65280") && why.contains("65264"), "{why}");
        // Header, a 255-octet question and the records: 65,535 exactly.
        assert_eq!(12 + 259 + MAX_RRSET_OCTETS, 65_535);
    }
}
