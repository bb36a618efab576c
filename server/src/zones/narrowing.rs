//! Which names a zone's change touched, from the change records a poll read.
//!
//! ```text
//!  poll: generations last+1 ..= top
//!     each one a change record, or some zone's current gen ─► accounted
//!     neither ─► a hole (a writer between taking it and showing it)
//!  per changed zone, held gen H ─► new gen N:
//!     H below a generation the poller gave up on ─► Everything
//!     a hole in (H, N], young ─► Wait: the zone stays at H this poll
//!                                (the hole's names may be this zone's)
//!     a hole in (H, N], old  ─► Everything (drop the whole zone)
//!     no hole in (H, N]      ─► changed_names: the listed names, or
//!                                Everything when a record says "all"
//! ```
//!
//! The poller never moves past a generation it has not accounted for
//! unless it gives up on it (after 5 s); so a zone held at H has no change
//! of its own left between H and the poller's position, and the records
//! above that position are all that is needed.
//!
//! A hole outside a zone's own range cannot hide one of its changes: below
//! H it was applied already, above N the zone does not show it yet (and the
//! poller re-reads from below the hole). So only the zones a hole could
//! belong to wait for it, and only for a moment; the rest are narrowed to
//! their names as usual.

use dns::{ChangeRecord, Name, ZoneInfo};
use std::collections::HashMap;

/// How a poll may narrow the changes it applies.
#[derive(Clone, Copy, Debug)]
pub enum Narrowing<'a> {
    /// Never: every changed zone drops all its cached nodes.
    Never,
    /// Narrow each zone unless one of `holes` falls in its range; such a
    /// zone waits for the hole when `wait`, else drops everything.
    AroundHoles {
        /// Generations of the poll's range that nothing accounts for.
        holes: &'a [i64],
        /// The holes are young: their writers are still expected to show them.
        wait: bool,
        /// The highest generation the poller moved past without accounting
        /// for it: a zone held below it drops everything (that generation
        /// may be its own). Every other generation at or below the poller's
        /// position is accounted for, so a zone's generations there are
        /// applied already and only the records above it are needed.
        read_from: i64,
    },
}

/// What one zone's change comes to.
#[derive(Debug, PartialEq)]
pub enum ZoneChange {
    /// Exactly these names changed.
    Names(Vec<Name>),
    /// Anything may have changed.
    Everything,
    /// Not applied this poll: a younger hole may still be this zone's.
    Wait,
}

/// The change of `apex` from generation `from` (held) to `to`, same version.
pub fn zone_change(
    apex: &Name,
    from: i64,
    to: i64,
    records: &HashMap<i64, ChangeRecord>,
    narrowing: Narrowing<'_>,
) -> ZoneChange {
    let holes = match narrowing {
        Narrowing::AroundHoles {
            holes,
            wait,
            read_from,
        } if from >= read_from => (holes, wait),
        _ => return ZoneChange::Everything,
    };
    match holes.0.iter().any(|h| from < *h && *h <= to) {
        true if holes.1 => ZoneChange::Wait,
        true => ZoneChange::Everything,
        false => {
            changed_names(apex, from, to, records).map_or(ZoneChange::Everything, ZoneChange::Names)
        }
    }
}

/// The generations in `from..=to` that neither a change record nor one of
/// the zones' current generations accounts for.
pub fn holes(from: i64, to: i64, records: &HashMap<i64, ChangeRecord>, gens: &[i64]) -> Vec<i64> {
    (from..=to)
        .filter(|g| !records.contains_key(g) && !gens.contains(g))
        .collect()
}

/// The first generation in `from..=to` whose change record names a zone
/// that does not show it yet: its writer stored the record and has not
/// moved the zone's `gen` (or the zone is still being created). The poller
/// stays below it, or that zone's change would be skipped for good.
pub fn first_unshown(
    from: i64,
    to: i64,
    records: &HashMap<i64, ChangeRecord>,
    zones: &[ZoneInfo],
    deleted: &[Name],
) -> Option<i64> {
    let shown = |zone: &Name, gen: i64| {
        deleted.contains(zone) || zones.iter().any(|z| z.apex == *zone && z.gen >= gen)
    };
    (from..=to).find(|g| records.get(g).is_some_and(|r| !shown(&r.zone, *g)))
}

/// The names `apex` changed from generation `from` (held) to `to`, when the
/// change records account for it: the record of `to` is this zone's, and
/// no record of this zone in between says "all". `None`: drop everything.
/// The caller made sure no generation in between is a hole.
fn changed_names(
    apex: &Name,
    from: i64,
    to: i64,
    records: &HashMap<i64, ChangeRecord>,
) -> Option<Vec<Name>> {
    if records.get(&to).map(|r| &r.zone) != Some(apex) {
        return None;
    }
    let mut names = Vec::new();
    for gen in from.saturating_add(1)..=to {
        match records.get(&gen) {
            Some(r) if r.zone == *apex => names.extend(r.names.as_ref()?.iter().cloned()),
            _ => {} // another zone's generation
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(zone: &str, names: Option<&[&str]>) -> ChangeRecord {
        ChangeRecord {
            zone: zone.parse().unwrap(),
            names: names.map(|n| n.iter().map(|s| s.parse().unwrap()).collect()),
            signed: false,
        }
    }

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    #[test]
    fn a_hole_holds_back_only_the_zones_it_could_belong_to() {
        // a.test. went 10 -> 13 (11 and 13 its own); 12 is a hole.
        // b.test. went 14 -> 15, above the hole (14: a replace, no record).
        let records = HashMap::from([
            (11, record("a.test.", Some(&["x.a.test."]))),
            (13, record("a.test.", Some(&["y.a.test."]))),
            (15, record("b.test.", Some(&["z.b.test."]))),
        ]);
        let holes = holes(11, 15, &records, &[13, 15, 14]);
        assert_eq!(holes, vec![12]);
        let young = Narrowing::AroundHoles {
            holes: &holes,
            wait: true,
            read_from: 10,
        };
        let old = Narrowing::AroundHoles {
            holes: &holes,
            wait: false,
            read_from: 10,
        };
        assert_eq!(
            zone_change(&name("a.test."), 10, 13, &records, young),
            ZoneChange::Wait
        );
        assert_eq!(
            zone_change(&name("a.test."), 10, 13, &records, old),
            ZoneChange::Everything
        );
        assert_eq!(
            zone_change(&name("b.test."), 14, 15, &records, young),
            ZoneChange::Names(vec![name("z.b.test.")])
        );
        // Held at 12 or above, the hole is behind a.test.: narrowed.
        assert_eq!(
            zone_change(&name("a.test."), 12, 13, &records, young),
            ZoneChange::Names(vec![name("y.a.test.")])
        );
    }

    #[test]
    fn records_say_what_changed_or_everything() {
        let records = HashMap::from([
            (2, record("a.test.", Some(&["x.a.test."]))),
            (3, record("b.test.", Some(&[]))),
            (4, record("a.test.", Some(&["y.a.test."]))),
            (5, record("a.test.", None)),
        ]);
        let none = Narrowing::AroundHoles {
            holes: &[],
            wait: true,
            read_from: 1,
        };
        let a = name("a.test.");
        assert_eq!(
            zone_change(&a, 1, 4, &records, none),
            ZoneChange::Names(vec![name("x.a.test."), name("y.a.test.")])
        );
        // "all" in the range, the last generation another zone's, or never.
        assert_eq!(
            zone_change(&a, 1, 5, &records, none),
            ZoneChange::Everything
        );
        assert_eq!(
            zone_change(&a, 1, 3, &records, none),
            ZoneChange::Everything
        );
        assert_eq!(
            zone_change(&a, 1, 4, &records, Narrowing::Never),
            ZoneChange::Everything
        );
        // Held below the records read: a generation of its own may be missing.
        let later = Narrowing::AroundHoles {
            holes: &[],
            wait: true,
            read_from: 2,
        };
        assert_eq!(
            zone_change(&a, 1, 4, &records, later),
            ZoneChange::Everything
        );
    }

    #[test]
    fn a_record_whose_zone_does_not_show_it_yet_is_found() {
        let info = |apex: &str, gen| ZoneInfo {
            apex: name(apex),
            ver: 1,
            gen,
            serial: 1,
        };
        let records = HashMap::from([
            (5, record("a.test.", Some(&[]))),
            (6, record("b.test.", Some(&[]))),
            (7, record("gone.test.", None)),
        ]);
        // b shows 6, a still shows 4 (its writer is between its two steps).
        let zones = [info("a.test.", 4), info("b.test.", 6)];
        let gone = [name("gone.test.")];
        assert_eq!(first_unshown(5, 7, &records, &zones, &gone), Some(5));
        let zones = [info("a.test.", 5), info("b.test.", 6)];
        assert_eq!(first_unshown(5, 7, &records, &zones, &gone), None);
        assert_eq!(first_unshown(5, 7, &records, &zones, &[]), Some(7));
    }
}
