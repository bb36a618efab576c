//! What residency is asked to do (the settings) and what it did (per zone).
//!
//! ```text
//!  ResidentConfig { budget_bytes, zones: all | listed, max_records, max_lag,
//!                   transfer_wait }
//!     wants(apex): residency on, the zone chosen
//!  Residence: Loading ─► Resident            (complete, current or catching up)
//!                   └─► TooLarge             (over the budget or max_records)
//!                   └─► Failed               (the load's read failed; retried)
//!  ZoneReport: one zone's residence, bytes and records (/metrics)
//! ```

use dns::Name;
use std::collections::HashSet;

/// Which zones may be resident.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneChoice {
    /// Every served zone, as long as the budget lasts.
    All,
    /// Only these apexes.
    Listed(HashSet<Name>),
}

impl ZoneChoice {
    /// `all`, or a comma-separated list of zone apexes.
    pub fn parse(text: &str) -> Result<ZoneChoice, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(ZoneChoice::All);
        }
        let mut zones = HashSet::new();
        for apex in text.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let absolute = if apex.ends_with('.') {
                apex.to_string()
            } else {
                format!("{apex}.")
            };
            let name: Name = absolute
                .parse()
                .map_err(|e| format!("resident_zones: bad zone {apex:?}: {e}"))?;
            zones.insert(name);
        }
        if zones.is_empty() {
            return Err("resident_zones: `all` or a list of zones".into());
        }
        Ok(ZoneChoice::Listed(zones))
    }
}

/// The settings of resident zones.
#[derive(Clone, Debug)]
pub struct ResidentConfig {
    /// Most bytes all resident zones may hold together (0: residency off).
    pub budget_bytes: usize,
    /// Which zones may be resident.
    pub zones: ZoneChoice,
    /// Most records one resident zone may have (0: any number).
    pub max_records: usize,
    /// How long a copy behind the served generation (names not applied
    /// yet, a new version loading) still answers (0: only when current).
    pub max_lag: std::time::Duration,
    /// How long a zone transfer waits for the copy of a version being
    /// loaded before it reads the database instead (0: never waits).
    pub transfer_wait: std::time::Duration,
}

impl ResidentConfig {
    /// Residency off: every zone on the record cache's path.
    pub fn off() -> ResidentConfig {
        ResidentConfig {
            budget_bytes: 0,
            zones: ZoneChoice::All,
            max_records: 0,
            max_lag: std::time::Duration::ZERO,
            transfer_wait: std::time::Duration::ZERO,
        }
    }

    /// True when any zone may be resident.
    pub fn enabled(&self) -> bool {
        self.budget_bytes > 0
    }

    /// True when the zone `apex` is to be held whole.
    pub fn wants(&self, apex: &Name) -> bool {
        self.enabled()
            && match &self.zones {
                ZoneChoice::All => true,
                ZoneChoice::Listed(zones) => zones.contains(apex),
            }
    }

    /// True when a zone of `records` records is over the per-zone limit.
    pub fn too_many(&self, records: usize) -> bool {
        self.max_records > 0 && records > self.max_records
    }
}

/// Where a zone stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residence {
    /// Being read from the database (served on today's path meanwhile).
    Loading,
    /// Held whole.
    Resident,
    /// Over the budget or the per-zone record limit: today's path.
    TooLarge,
    /// The last load failed (a database fault); it is tried again.
    Failed,
}

impl Residence {
    /// The label `/metrics` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Residence::Loading => "loading",
            Residence::Resident => "resident",
            Residence::TooLarge => "too_large",
            Residence::Failed => "failed",
        }
    }
}

/// One zone's residency, as `/metrics` shows it.
#[derive(Clone, Debug)]
pub struct ZoneReport {
    /// The zone.
    pub apex: Name,
    /// Where it stands.
    pub residence: Residence,
    /// True when the copy answers now (its generation is the served one).
    pub current: bool,
    /// Approximate bytes held (0 unless resident).
    pub bytes: usize,
    /// Records held (0 unless resident).
    pub records: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_choice_reads_all_or_a_list() {
        assert_eq!(ZoneChoice::parse("all").unwrap(), ZoneChoice::All);
        let listed = ZoneChoice::parse("a.test, b.test.").unwrap();
        let config = ResidentConfig {
            budget_bytes: 1,
            zones: listed,
            max_records: 0,
            max_lag: std::time::Duration::ZERO,
            transfer_wait: std::time::Duration::ZERO,
        };
        assert!(config.wants(&"a.test.".parse().unwrap()));
        assert!(config.wants(&"b.test.".parse().unwrap()));
        assert!(!config.wants(&"c.test.".parse().unwrap()));
        assert!(ZoneChoice::parse(" , ").is_err());
        assert!(!ResidentConfig::off().wants(&"a.test.".parse().unwrap()));
    }
}
