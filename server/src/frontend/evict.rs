//! Which held connection a newcomer may take the slot of, every slot being
//! taken: pure choices over the held slots (oldest first), for slots.rs.
//!
//! ```text
//!  DNS over TCP (heaviest): newcomer's prefix holds ≥ 2, others hold some,
//!     and it holds more than an even share (held / prefixes, its own
//!     counted) ─► Refuse; else the prefix holding the most (≥ 2) ─► its
//!     oldest connection (Evict), none that heavy ─► Wait
//!  HTTP (silent): among connections that have not sent a whole request
//!     head, those of the prefix holding the most slots (ties: the prefix
//!     with the oldest such connection) ─► its oldest (Evict); none ─► Refuse
//!     (a connection mid-request is never picked)
//! ```

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// One held slot, as the choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeldView {
    /// The connection's source prefix.
    pub prefix: IpAddr,
    /// Its whole request head has arrived (HTTP; never set for DNS).
    pub head_in: bool,
}

/// What a newcomer at a full listener gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Choice {
    /// Closed at once.
    Refuse,
    /// Waits for a slot, nobody evicted.
    Wait,
    /// The slot held under this id is told to close; the newcomer waits
    /// for it.
    Evict(u64),
}

/// DNS over TCP: see the module sketch.
pub fn heaviest<'a>(held: impl Iterator<Item = (u64, &'a HeldView)>, newcomer: IpAddr) -> Choice {
    let held: Vec<(u64, &HeldView)> = held.collect();
    let counts = counts(held.iter().map(|(_, h)| h.prefix));
    let own = counts.get(&newcomer).copied().unwrap_or(0);
    if own >= 2 && counts.len() > 1 && own * counts.len() > held.len() {
        return Choice::Refuse;
    }
    let Some((&heavy, &n)) = counts.iter().max_by_key(|(_, n)| **n) else {
        return Choice::Wait;
    };
    if n < 2 {
        return Choice::Wait;
    }
    held.iter()
        .find(|(_, h)| h.prefix == heavy)
        .map_or(Choice::Wait, |(id, _)| Choice::Evict(*id))
}

/// HTTP: see the module sketch.
pub fn silent<'a>(held: impl Iterator<Item = (u64, &'a HeldView)>) -> Choice {
    let mut counts: HashMap<IpAddr, usize> = HashMap::new();
    let mut oldest_silent: BTreeMap<IpAddr, u64> = BTreeMap::new();
    for (id, h) in held {
        *counts.entry(h.prefix).or_insert(0) += 1;
        if !h.head_in {
            oldest_silent.entry(h.prefix).or_insert(id);
        }
    }
    oldest_silent
        .iter()
        .max_by_key(|(prefix, id)| (counts[*prefix], std::cmp::Reverse(**id)))
        .map_or(Choice::Refuse, |(_, id)| Choice::Evict(*id))
}

fn counts(prefixes: impl Iterator<Item = IpAddr>) -> HashMap<IpAddr, usize> {
    let mut counts = HashMap::new();
    for p in prefixes {
        *counts.entry(p).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(prefix: &str, head_in: bool) -> HeldView {
        HeldView {
            prefix: prefix.parse().unwrap(),
            head_in,
        }
    }

    fn map(views: &[HeldView]) -> BTreeMap<u64, HeldView> {
        views
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64, *v))
            .collect()
    }

    #[test]
    fn silent_picks_the_oldest_silent_of_the_heaviest_prefix() {
        let a = "192.0.2.0";
        let b = "198.51.100.0";
        // a holds 3 (its oldest mid-request), b holds 2.
        let held = map(&[
            view(a, true),
            view(b, false),
            view(a, false),
            view(b, false),
            view(a, false),
        ]);
        assert_eq!(silent(held.iter().map(|(k, v)| (*k, v))), Choice::Evict(2));
    }

    #[test]
    fn silent_breaks_ties_by_age_and_never_picks_a_request_in_flight() {
        let a = "192.0.2.0";
        let b = "198.51.100.0";
        let held = map(&[view(a, true), view(b, false), view(a, false), view(b, true)]);
        assert_eq!(silent(held.iter().map(|(k, v)| (*k, v))), Choice::Evict(1));
        let busy = map(&[view(a, true), view(b, true)]);
        assert_eq!(silent(busy.iter().map(|(k, v)| (*k, v))), Choice::Refuse);
    }

    #[test]
    fn heaviest_refuses_a_heavy_newcomer_and_evicts_from_the_heaviest() {
        let a = "192.0.2.0";
        let b = "198.51.100.0";
        let held = map(&[
            view(b, false),
            view(a, false),
            view(a, false),
            view(b, false),
            view(a, false),
        ]);
        let pick = |n: &str| heaviest(held.iter().map(|(k, v)| (*k, v)), n.parse().unwrap());
        // b holds 2 of 5, under an even share (2.5): it waits, a gives up
        // its oldest; a holds 3, over it: refused.
        assert_eq!(pick(b), Choice::Evict(1));
        assert_eq!(pick(a), Choice::Refuse);
        assert_eq!(pick("203.0.113.0"), Choice::Evict(1));
        // Two of a light prefix's connections still closing do not make
        // it heavy: it waits while the heaviest gives up its oldest.
        let c = "203.0.113.0";
        let mut views = vec![view(c, false), view(c, false)];
        views.extend([a, b, a, b, a, b, a].map(|p| view(p, false)));
        let held = map(&views);
        let pick = |n: &str| heaviest(held.iter().map(|(k, v)| (*k, v)), n.parse().unwrap());
        assert_eq!(pick(c), Choice::Evict(2));
        assert_eq!(pick(a), Choice::Refuse);
        let single = map(&[view(a, false)]);
        let one = heaviest(single.iter().map(|(k, v)| (*k, v)), b.parse().unwrap());
        assert_eq!(one, Choice::Wait);
    }
}
