//! The names a copy has yet to read again: which lookups it can still
//! answer while it catches up.
//!
//! ```text
//!  hear: merge from → to, names N (same version) ─► heard(from, to, N)
//!          from == through ─► through = to, N counted pending
//!          otherwise (a gap, "all", a new version) ─► not extended
//!  keeper: names of a merge read, copy.gen = to ─► applied(to): its names
//!          no longer pending (unless a later merge lists them too)
//!  lookup of `name` in zone at gen G (copy at gen C < G):
//!          G ≤ through and name not pending ─► the copy's node is the
//!          node at G (no merge since C wrote it) ─► answered from memory
//!          otherwise ─► today's path
//! ```
//!
//! Every write lists the names it wrote, new names' empty non-terminals and,
//! in signed zones, the neighbours whose NSEC or NSEC3 records it changed
//! (docs/schema.md). A node not listed by any merge since the copy's
//! generation is therefore the same at the served generation: the copy
//! answers point lookups of it even while it reads the listed names again.
//! Denial lookups (the chain between names) still go to today's path until
//! the copy is current.

use dns::Name;
use std::collections::{HashMap, VecDeque};

/// The unbroken chain of merges heard past a copy's generation.
#[derive(Debug)]
pub(super) struct PendingNames {
    /// The last generation the chain reaches (the copy's own when empty).
    through: i64,
    /// Each merge heard and not applied: the generation it made, its names.
    merges: VecDeque<(i64, Vec<Name>)>,
    /// How many pending merges list each name.
    counts: HashMap<Name, u32>,
}

impl PendingNames {
    /// Nothing pending for a copy at generation `gen`.
    pub(super) fn new(gen: i64) -> PendingNames {
        PendingNames {
            through: gen,
            merges: VecDeque::new(),
            counts: HashMap::new(),
        }
    }

    /// A merge from generation `from` to `to` wrote `names`: extends the
    /// chain when it follows on from its end. Returns whether it did.
    pub(super) fn heard(&mut self, from: i64, to: i64, names: &[Name]) -> bool {
        if to <= self.through {
            return true; // already within the chain (a load read it)
        }
        if from != self.through {
            return false;
        }
        for name in names {
            *self.counts.entry(name.clone()).or_insert(0) += 1;
        }
        self.merges.push_back((to, names.to_vec()));
        self.through = to;
        true
    }

    /// The copy now holds generation `gen`: merges up to it are no longer
    /// pending.
    pub(super) fn applied(&mut self, gen: i64) {
        while self.merges.front().is_some_and(|(to, _)| *to <= gen) {
            let Some((_, names)) = self.merges.pop_front() else {
                break;
            };
            for name in names {
                if let Some(n) = self.counts.get_mut(&name) {
                    *n -= 1;
                    if *n == 0 {
                        self.counts.remove(&name);
                    }
                }
            }
        }
        self.through = self.through.max(gen);
    }

    /// True when the node `name` is the same at generation `gen` as in the
    /// copy: the chain reaches `gen` and no merge in it listed `name`.
    pub(super) fn unchanged(&self, gen: i64, name: &Name) -> bool {
        gen <= self.through && !self.counts.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn names_not_listed_by_an_unbroken_chain_are_unchanged() {
        let mut p = PendingNames::new(10);
        assert!(p.heard(10, 11, &[n("a.example.")]));
        assert!(p.heard(11, 13, &[n("b.example."), n("a.example.")]));
        assert!(p.unchanged(13, &n("c.example.")));
        assert!(p.unchanged(12, &n("c.example.")));
        assert!(!p.unchanged(13, &n("a.example.")));
        assert!(!p.unchanged(13, &n("B.Example.")), "case-folded");
        // Beyond the chain: not known.
        assert!(!p.unchanged(14, &n("c.example.")));
        // Applying the first merge keeps a.example. pending: the second
        // lists it too.
        p.applied(11);
        assert!(!p.unchanged(13, &n("a.example.")));
        p.applied(13);
        assert!(p.unchanged(13, &n("a.example.")));
        assert!(p.unchanged(13, &n("b.example.")));
    }

    #[test]
    fn a_gap_in_the_chain_stops_it() {
        let mut p = PendingNames::new(10);
        assert!(p.heard(10, 11, &[n("a.example.")]));
        // 11 → 12 was never heard (not narrowed, or another version).
        assert!(!p.heard(12, 13, &[n("b.example.")]));
        assert!(!p.unchanged(13, &n("c.example.")));
        assert!(p.unchanged(11, &n("c.example.")));
        // A merge already read by a load is within the chain.
        assert!(p.heard(9, 10, &[n("d.example.")]));
        assert!(p.unchanged(11, &n("d.example.")));
    }
}
