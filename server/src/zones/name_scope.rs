//! Replies that outlive a change of their zone which did not touch them.
//!
//! ```text
//!  a plain positive answer (the question's own node, no CNAME, wildcard,
//!  referral, authority or additional records) depends only on:
//!     the question's node, the names between it and the apex (a new cut
//!     or DNAME there), and a DNAME at the apex
//!  poller ─► NameChanges::names_changed(names, apex redirects?) : seq += 1,
//!               each listed name (and the apex, when it holds a DNAME now)
//!               marked with seq
//!          ─► NameChanges::everything_changed (not narrowed, a new
//!               version, a purge): seq += 1, every reply from before is void
//!  packet cache: a reply kept at token t (the seq when its generation was
//!     current) is still true iff nothing whole happened after t and no
//!     name of its chain was marked after t   (NameChanges::untouched)
//! ```
//!
//! A steady import publishing every 200 ms into a zone then voids only the
//! replies for the names it wrote, not every reply of the zone.

use dns::Name;
use std::collections::HashMap;

/// Past this many names remembered, a change counts as whole (memory bound).
const MAX_NAMES: usize = 100_000;

/// The changes applied to one zone, numbered, and which names each touched.
#[derive(Default)]
pub struct NameChanges {
    /// Number of the last change applied.
    seq: u64,
    /// Number of the last change that may have touched any name.
    whole: u64,
    /// Lower-case wire name ─► number of the last change that listed it.
    names: HashMap<Vec<u8>, u64>,
}

impl NameChanges {
    /// The token of the zone's current state: replies answered now keep it.
    pub fn token(&self) -> u64 {
        self.seq
    }

    /// A change that touched exactly `names`; `apex_redirects` when the
    /// apex (listed or not) now holds a DNAME, which redirects every name.
    pub fn names_changed(&mut self, names: &[Name], apex_redirects: bool) {
        self.seq += 1;
        if apex_redirects || self.names.len() + names.len() > MAX_NAMES {
            self.whole_change();
            return;
        }
        for name in names {
            self.names.insert(name.as_wire().to_vec(), self.seq);
        }
    }

    /// A change that may have touched any name.
    pub fn everything_changed(&mut self) {
        self.seq += 1;
        self.whole_change();
    }

    fn whole_change(&mut self) {
        self.whole = self.seq;
        self.names.clear();
    }

    /// True when no change after `token` may have touched the plain
    /// positive answer for `qname` (lower-case wire, in the zone) whose
    /// apex is `apex_len` wire octets long: no whole change, and no listed
    /// name among `qname` itself and its ancestors below the apex.
    pub fn untouched(&self, token: u64, qname: &[u8], apex_len: usize) -> bool {
        if self.whole > token {
            return false;
        }
        let mut at = 0;
        loop {
            let Some(rest) = qname.get(at..).filter(|r| !r.is_empty()) else {
                return true;
            };
            if self.names.get(rest).is_some_and(|seq| *seq > token) {
                return false;
            }
            at += 1 + usize::from(rest[0]);
            if qname.len().saturating_sub(at) <= apex_len {
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        Name::parse(s, None).unwrap()
    }

    const APEX_LEN: usize = 13; // "example.com."

    #[test]
    fn only_a_change_to_the_name_or_an_ancestor_below_the_apex_touches_it() {
        let mut changes = NameChanges::default();
        let t = changes.token();
        let www = name("www.sub.example.com.");
        let wire = www.as_wire();
        assert_eq!(name("example.com.").wire_len(), APEX_LEN);
        changes.names_changed(&[name("other.example.com."), name("example.com.")], false);
        assert!(
            changes.untouched(t, wire, APEX_LEN),
            "other names and the apex's SOA"
        );
        changes.names_changed(&[name("sub.example.com.")], false);
        assert!(
            !changes.untouched(t, wire, APEX_LEN),
            "a cut or DNAME may be new"
        );
        let t2 = changes.token();
        assert!(
            changes.untouched(t2, wire, APEX_LEN),
            "kept after the change"
        );
        changes.names_changed(std::slice::from_ref(&www), false);
        assert!(!changes.untouched(t2, wire, APEX_LEN));
        let t3 = changes.token();
        changes.names_changed(&[name("x.www.sub.example.com.")], false);
        assert!(changes.untouched(t3, wire, APEX_LEN), "a name below it");
    }

    #[test]
    fn a_whole_change_or_a_dname_at_the_apex_touches_everything() {
        let mut changes = NameChanges::default();
        let wire = name("www.example.com.").as_wire().to_vec();
        let t = changes.token();
        changes.names_changed(&[name("example.com.")], true);
        assert!(!changes.untouched(t, &wire, APEX_LEN));
        let t = changes.token();
        changes.everything_changed();
        assert!(!changes.untouched(t, &wire, APEX_LEN));
        let t = changes.token();
        assert!(changes.untouched(t, &wire, APEX_LEN));
        // The apex's own answer is touched by a change listing the apex.
        let apex = name("example.com.");
        changes.names_changed(std::slice::from_ref(&apex), false);
        assert!(!changes.untouched(t, apex.as_wire(), APEX_LEN));
    }
}
