//! Pass 1 of an import: every record checked before anything is written.
//!
//! ```text
//!  ZoneFileReader ─► Record ─► check_record (in zone, not meta, SOA at the
//!  apex only and once, CNAME alone at its name, none at the apex)
//!  ─► end of file ─► SOA present when the zone needs one ─► record count
//! ```

use super::ImportError;
use backend_mongo::{Name, RType};
use dns::presentation::{Record, ZoneFileReader};
use std::path::Path;

/// Pass 1: reads the whole file and checks it; returns the record count.
pub fn validate(path: &Path, zone: &Name, must_have_soa: bool) -> Result<u64, ImportError> {
    let reader = ZoneFileReader::open(path, zone.clone(), None)?;
    validate_records(reader, path, zone, must_have_soa, 0)
}

/// Checks the records of one zone read by `reader`; `line_offset` is added
/// to line numbers (a zone inside a multi-zone file).
pub fn validate_records(
    reader: ZoneFileReader,
    path: &Path,
    zone: &Name,
    must_have_soa: bool,
    line_offset: usize,
) -> Result<u64, ImportError> {
    let mut checker = ZoneChecker::new(zone);
    for record in reader {
        let record = record.map_err(|mut e| {
            e.line += line_offset;
            e
        })?;
        checker
            .check_record(&record)
            .map_err(|message| ImportError::Invalid {
                file: record.location.file.as_ref().clone(),
                line: record.location.line + line_offset,
                message,
            })?;
    }
    if must_have_soa && !checker.soa_seen {
        return Err(ImportError::Zone(format!(
            "{}: no SOA record for {zone}: a new zone, or one loaded with --replace, needs one",
            path.display()
        )));
    }
    Ok(checker.count)
}

/// What the check has seen so far of one zone's records.
struct ZoneChecker<'a> {
    zone: &'a Name,
    count: u64,
    soa_seen: bool,
    /// The current owner (owners are usually contiguous) and its types.
    owner: Option<Name>,
    types: Vec<RType>,
}

impl<'a> ZoneChecker<'a> {
    fn new(zone: &'a Name) -> Self {
        ZoneChecker {
            zone,
            count: 0,
            soa_seen: false,
            owner: None,
            types: Vec::new(),
        }
    }

    /// Checks one record against the zone and the records before it; the
    /// error is the message for the record's line.
    fn check_record(&mut self, record: &Record) -> Result<(), String> {
        let zone = self.zone;
        self.count += 1;
        if !record.owner.is_subdomain_of(zone) {
            return Err(format!("{} is outside the zone {zone}", record.owner));
        }
        if record.rtype.is_meta() {
            return Err(format!("{} cannot be stored in a zone", record.rtype));
        }
        if record.rtype == RType::SOA {
            self.check_soa(record)?;
        }
        self.check_cname(record)
    }

    fn check_soa(&mut self, record: &Record) -> Result<(), String> {
        if record.owner != *self.zone {
            return Err("SOA is only allowed at the zone apex".into());
        }
        if self.soa_seen {
            return Err("more than one SOA record".into());
        }
        self.soa_seen = true;
        Ok(())
    }

    /// A CNAME shares its name with nothing but DNSSEC records, and is
    /// never at the apex.
    fn check_cname(&mut self, record: &Record) -> Result<(), String> {
        if self.owner.as_ref() != Some(&record.owner) {
            self.owner = Some(record.owner.clone());
            self.types.clear();
        }
        if !self.types.contains(&record.rtype) {
            self.types.push(record.rtype);
        }
        let dnssec = |t: &RType| matches!(*t, RType::CNAME | RType::RRSIG | RType::NSEC);
        if self.types.contains(&RType::CNAME) && !self.types.iter().all(dnssec) {
            return Err(format!("{} has a CNAME and other data", record.owner));
        }
        if record.rtype == RType::CNAME && record.owner == *self.zone {
            return Err("a CNAME at the zone apex is not allowed".into());
        }
        Ok(())
    }
}
