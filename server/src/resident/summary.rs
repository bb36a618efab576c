//! Residency summed for `/metrics` and `/health`: totals over every wanted
//! zone, and only the few largest zones on their own, so a server with a
//! million small resident zones does not write a million series.
//!
//! ```text
//!  Residency::summary(top) ─► each wanted zone (keeper.rs, under its locks):
//!     add(apex, figures) ─► totals by state, bytes, records
//!                       ─► among the `top` largest so far? ── yes ──► kept
//!                          (the apex is cloned only then; the smallest
//!                          kept one leaves)
//!  finish() ─► largest: bytes descending, then records, then apex
//! ```

use super::status::{Residence, ZoneReport};
use dns::Name;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// One zone's figures, as the keeper reads them.
#[derive(Clone, Copy, Debug)]
pub struct ZoneFigures {
    /// Where it stands.
    pub residence: Residence,
    /// True when its copy answers now.
    pub current: bool,
    /// Approximate bytes held.
    pub bytes: usize,
    /// Records held.
    pub records: usize,
}

/// Residency over every wanted zone, with the largest zones on their own.
#[derive(Debug)]
pub struct ResidencySummary {
    top: usize,
    kept: BinaryHeap<Reverse<Ranked>>,
    /// The `top` largest zones by bytes (ties: records, then apex),
    /// largest first;
    /// filled by [`ResidencySummary::finish`].
    pub largest: Vec<ZoneReport>,
    /// Wanted zones.
    pub zones: u64,
    /// Zones held whole.
    pub resident: u64,
    /// Zones being loaded.
    pub loading: u64,
    /// Zones over the budget or the record limit.
    pub too_large: u64,
    /// Zones whose last load failed.
    pub failed: u64,
    /// Bytes all copies hold.
    pub bytes: u64,
    /// Records all copies hold.
    pub records: u64,
}

/// A kept zone, ordered by size: more bytes ranks higher, then more
/// records, then the apex sorting first.
#[derive(Debug)]
struct Ranked(ZoneReport);

impl Ranked {
    fn cmp_to(&self, bytes: usize, records: usize, apex: &Name) -> Ordering {
        (self.0.bytes, self.0.records)
            .cmp(&(bytes, records))
            .then_with(|| apex.cmp(&self.0.apex))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_to(other.0.bytes, other.0.records, &other.0.apex)
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

impl ResidencySummary {
    /// An empty summary keeping at most `top` zones on their own.
    pub fn new(top: usize) -> ResidencySummary {
        ResidencySummary {
            top,
            kept: BinaryHeap::with_capacity(top.min(4096) + 1),
            largest: Vec::new(),
            zones: 0,
            resident: 0,
            loading: 0,
            too_large: 0,
            failed: 0,
            bytes: 0,
            records: 0,
        }
    }

    /// Counts one zone, and keeps it if it is among the largest so far.
    pub fn add(&mut self, apex: &Name, z: ZoneFigures) {
        self.zones += 1;
        *match z.residence {
            Residence::Resident => &mut self.resident,
            Residence::Loading => &mut self.loading,
            Residence::TooLarge => &mut self.too_large,
            Residence::Failed => &mut self.failed,
        } += 1;
        self.bytes += z.bytes as u64;
        self.records += z.records as u64;
        if self.top == 0 {
            return;
        }
        let full = self.kept.len() >= self.top;
        let smallest = self.kept.peek().map(|Reverse(r)| r);
        if full && smallest.is_some_and(|s| s.cmp_to(z.bytes, z.records, apex) != Ordering::Less) {
            return;
        }
        self.kept.push(Reverse(Ranked(ZoneReport {
            apex: apex.clone(),
            residence: z.residence,
            current: z.current,
            bytes: z.bytes,
            records: z.records,
        })));
        if self.kept.len() > self.top {
            self.kept.pop();
        }
    }

    /// Orders the kept zones, largest first, into `largest`.
    pub fn finish(mut self) -> ResidencySummary {
        let kept = std::mem::take(&mut self.kept).into_sorted_vec();
        self.largest = kept.into_iter().map(|Reverse(r)| r.0).collect();
        self
    }

    /// Zones not in `largest`, and their bytes and records.
    pub fn rest(&self) -> (u64, u64, u64) {
        let bytes: u64 = self.largest.iter().map(|z| z.bytes as u64).sum();
        let records: u64 = self.largest.iter().map(|z| z.records as u64).sum();
        (
            self.zones - self.largest.len() as u64,
            self.bytes - bytes,
            self.records - records,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(bytes: usize) -> ZoneFigures {
        ZoneFigures {
            residence: Residence::Resident,
            current: true,
            bytes,
            records: bytes / 10,
        }
    }

    #[test]
    fn keeps_the_largest_and_sums_the_rest() {
        let mut s = ResidencySummary::new(3);
        for (i, bytes) in [50, 700, 20, 900, 700, 10, 300].into_iter().enumerate() {
            let apex: Name = format!("z{i}.test.").parse().unwrap();
            s.add(&apex, figures(bytes));
        }
        let loading: Name = "loading.test.".parse().unwrap();
        s.add(
            &loading,
            ZoneFigures {
                residence: Residence::Loading,
                ..figures(0)
            },
        );
        let s = s.finish();
        let kept: Vec<(String, usize)> = s
            .largest
            .iter()
            .map(|z| (z.apex.to_string(), z.bytes))
            .collect();
        let want = [("z3.test.", 900), ("z1.test.", 700), ("z4.test.", 700)];
        let want: Vec<(String, usize)> = want.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        assert_eq!(kept, want);
        assert_eq!((s.zones, s.resident, s.loading), (8, 7, 1));
        assert_eq!((s.bytes, s.records), (2680, 268));
        assert_eq!(s.rest(), (5, 380, 38));
        assert!(ResidencySummary::new(0).finish().largest.is_empty());
    }
}
