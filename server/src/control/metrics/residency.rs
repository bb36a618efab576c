//! Resident zones on the control endpoint: totals on `/stats` and
//! `/metrics`, and labelled lines for the largest zones only on `/metrics`.
//!
//! ```text
//!  resident_metrics ─► resident_zones, resident_loading, resident_too_large,
//!                      resident_bytes (gauges); resident_lookups,
//!                      resident_passed_on, resident_loads,
//!                      resident_load_failures, resident_names_read,
//!                      resident_lagging, resident_load_paused_ms,
//!                      resident_unchanged, resident_transfers,
//!                      resident_transfer_waits, resident_plain_answers
//!                      (counters)
//!  encode_resident_zones ─► the zone_series largest zones (by bytes):
//!                          mongodns_resident_zone{zone,state} 1,
//!                          mongodns_resident_zone_current{zone},
//!                          mongodns_resident_zone_bytes{zone},
//!                          mongodns_resident_zone_records{zone};
//!                          the others summed: mongodns_resident_unlisted_zones,
//!                          _bytes, _records
//! ```
//!
//! With residency off every total is 0 and no zone is listed. A scrape
//! stays bounded with a million resident zones: four lines for each of at
//! most `--metrics-zone-series` zones.

use super::{counter, family, gauge, sample, Metric, MetricKind};
use crate::control::Control;
use crate::resident::{ResidencySummary, ZoneReport};
use prometheus_client::encoding::DescriptorEncoder;
use std::fmt;
use std::sync::atomic::Ordering;

/// A per-zone family: name, help, the value of one zone.
type ZoneLine = (&'static str, &'static str, fn(&ZoneReport) -> u64);

impl Control {
    /// Residency summed, with the `top` largest zones (empty when off).
    fn resident_summary(&self, top: usize) -> ResidencySummary {
        self.residency
            .as_ref()
            .map_or_else(|| ResidencySummary::new(0), |r| r.summary(top))
    }

    /// The totals of residency.
    pub(super) fn resident_metrics(&self) -> [Metric; 16] {
        let s = self.resident_summary(0);
        let c = self.residency.as_ref().map(|r| &r.counters);
        let load = |f: fn(&crate::resident::ResidentCounters) -> &std::sync::atomic::AtomicU64| {
            c.map_or(0, |c| f(c).load(Ordering::Relaxed))
        };
        [
            gauge("resident_zones", "zones held whole in memory", s.resident),
            gauge(
                "resident_loading",
                "zones being loaded to be resident (served from the record cache meanwhile)",
                s.loading,
            ),
            gauge(
                "resident_too_large",
                "zones over the resident budget or record limit (served from the record cache)",
                s.too_large,
            ),
            gauge(
                "resident_bytes",
                "approximate bytes held by resident zones",
                s.bytes,
            ),
            gauge(
                "resident_records",
                "records held by resident zones",
                s.records,
            ),
            counter(
                "resident_lookups",
                "node and denial lookups answered from resident zones",
                load(|c| &c.lookups),
            ),
            counter(
                "resident_passed_on",
                "lookups of a resident zone not yet current after a change (record cache path)",
                load(|c| &c.passed_on),
            ),
            counter(
                "resident_loads",
                "resident zone loads completed",
                load(|c| &c.loads),
            ),
            counter(
                "resident_load_failures",
                "resident zone loads that failed on a database fault (retried)",
                load(|c| &c.load_failures),
            ),
            counter(
                "resident_names_read",
                "names read again into resident zones for merge generations",
                load(|c| &c.names_read),
            ),
            counter(
                "resident_lagging",
                "questions answered from a resident copy catching up, within --resident-lag-ms",
                load(|c| &c.lagging),
            ),
            counter(
                "resident_load_paused_ms",
                "milliseconds resident zone loads waited for the answer path's database reads",
                load(|c| &c.load_paused_ms),
            ),
            counter(
                "resident_unchanged",
                "lookups answered from a resident copy catching up, of names no merge since listed",
                load(|c| &c.unchanged),
            ),
            counter(
                "resident_transfers",
                "zone transfers sent from resident copies (no database read)",
                load(|c| &c.transfers),
            ),
            counter(
                "resident_plain_answers",
                "plain questions answered in one step from resident zones' bytes",
                load(|c| &c.plain_answers),
            ),
            counter(
                "resident_transfer_waits",
                "zone transfers that waited for a resident copy being loaded",
                load(|c| &c.transfer_waits),
            ),
        ]
    }

    /// Labelled lines for the largest wanted zones and what they hold,
    /// and the others summed.
    pub(super) fn encode_resident_zones(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        if self.residency.is_none() {
            return Ok(());
        }
        let summary = self.resident_summary(self.zone_series);
        encode_unlisted(e, &summary)?;
        let reports = summary.largest;
        if reports.is_empty() {
            return Ok(());
        }
        let zones: Vec<String> = reports.iter().map(|z| z.apex.to_string()).collect();
        let mut m = family(
            e,
            "mongodns_resident_zone",
            "1 for the residency state of each wanted zone (loading, resident, too_large, failed)",
            MetricKind::Gauge,
        )?;
        for (z, zone) in reports.iter().zip(&zones) {
            let labels = [("zone", zone.as_str()), ("state", z.residence.as_str())];
            sample(&mut m, &labels, &1u64)?;
        }
        for (name, help, value) in ZONE_LINES {
            let mut m = family(e, name, help, MetricKind::Gauge)?;
            for (z, zone) in reports.iter().zip(&zones) {
                sample(&mut m, &[("zone", zone.as_str())], &value(z))?;
            }
        }
        Ok(())
    }
}

/// What each listed zone holds, a family each.
const ZONE_LINES: [ZoneLine; 3] = [
    (
        "mongodns_resident_zone_current",
        "1 while the resident copy answers (it holds the generation served)",
        |z| u64::from(z.current),
    ),
    (
        "mongodns_resident_zone_bytes",
        "approximate bytes the resident copy holds",
        |z| z.bytes as u64,
    ),
    (
        "mongodns_resident_zone_records",
        "records the resident copy holds",
        |z| z.records as u64,
    ),
];

/// The zones without lines of their own, summed.
fn encode_unlisted(e: &mut DescriptorEncoder, summary: &ResidencySummary) -> fmt::Result {
    let (zones, bytes, records) = summary.rest();
    let lines = [
        (
            "mongodns_resident_unlisted_zones",
            "wanted zones without mongodns_resident_zone lines (past --metrics-zone-series)",
            zones,
        ),
        (
            "mongodns_resident_unlisted_bytes",
            "approximate bytes the resident copies of those zones hold",
            bytes,
        ),
        (
            "mongodns_resident_unlisted_records",
            "records the resident copies of those zones hold",
            records,
        ),
    ];
    for (name, help, value) in lines {
        sample(&mut family(e, name, help, MetricKind::Gauge)?, &[], &value)?;
    }
    Ok(())
}
