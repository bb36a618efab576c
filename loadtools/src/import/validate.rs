//! Pass 1 of an import: every record checked before anything is written.
//!
//! ```text
//!  ZoneFileReader ─► Record ─► check_record (in zone, not meta, SOA at the
//!  apex only and once; a type the signer maintains: counted, left out;
//!  an RRset within what one message holds, CNAME alone at its name, none
//!  at the apex)
//!  ─► end of file ─► SOA present when the zone needs one ─► Checked
//! ```

use super::ImportError;
use dns::presentation::{Record, ZoneFileReader};
use dns::rrset::{record_octets, too_large_text, MAX_RRSET_OCTETS};
use dns::{Name, RType};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What pass 1 found in a zone's records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Records read.
    pub records: u64,
    /// Records of the types the signer maintains (RRSIG, NSEC, NSEC3,
    /// NSEC3PARAM, DNSKEY, CDS, CDNSKEY), left out of the import.
    pub signer_owned: u64,
}

/// Pass 1: reads the whole file and checks it.
pub fn validate(path: &Path, zone: &Name, must_have_soa: bool) -> Result<Checked, ImportError> {
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
) -> Result<Checked, ImportError> {
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
    Ok(Checked {
        records: checker.count,
        signer_owned: checker.signer_owned,
    })
}

/// What the check has seen so far of one zone's records.
struct ZoneChecker<'a> {
    zone: &'a Name,
    count: u64,
    soa_seen: bool,
    /// Records of the types the signer maintains, left out of the import.
    signer_owned: u64,
    /// The current owner (owners are usually contiguous) and its types.
    owner: Option<Name>,
    types: Vec<RType>,
    /// The current owner's RRsets so far: distinct rdata, octets in a message.
    sizes: HashMap<RType, (HashSet<Vec<u8>>, usize)>,
}

impl<'a> ZoneChecker<'a> {
    fn new(zone: &'a Name) -> Self {
        ZoneChecker {
            zone,
            count: 0,
            soa_seen: false,
            signer_owned: 0,
            owner: None,
            types: Vec::new(),
            sizes: HashMap::new(),
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
        if self.owner.as_ref() != Some(&record.owner) {
            self.owner = Some(record.owner.clone());
            self.types.clear();
            self.sizes.clear();
        }
        if record.rtype.is_signer_owned() {
            // Left out (nodes.rs): the signer rebuilds them.
            self.signer_owned += 1;
            return Ok(());
        }
        self.check_size(record)?;
        self.check_cname(record)
    }

    /// An RRset stays within what one DNS message can hold
    /// (`dns::rrset::MAX_RRSET_OCTETS`); checked over the records of an
    /// owner that appear together, as the CNAME rule is.
    fn check_size(&mut self, record: &Record) -> Result<(), String> {
        let (seen, octets) = self.sizes.entry(record.rtype).or_default();
        if seen.insert(record.rdata.clone()) {
            *octets += record_octets(record.rdata.len());
        }
        match *octets > MAX_RRSET_OCTETS {
            true => Err(too_large_text(&record.owner, record.rtype, *octets)),
            false => Ok(()),
        }
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
