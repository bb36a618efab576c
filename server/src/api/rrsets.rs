//! RRsets between the API's JSON and the store: stored nodes rendered for
//! reading, PowerDNS changes turned into one change-set's edits.
//!
//! ```text
//!  read:   FullNode ─► not NSEC3, not a DNSSEC type, the type asked
//!            ─► RRsetJson (rdata_text), one node at a time
//!  PATCH:  RRsetChange ─► owner in the zone? type known, not DNSSEC?
//!            REPLACE ─► parse_rdata each content ─► RecordEdit::ReplaceRRset
//!            DELETE  ─► RecordEdit::DeleteRRset (not the apex SOA or NS)
//!  after:  Edited::Ignored in the summary ─► 422 with the reasons
//! ```

use super::json::{ApiError, RRsetChange, RRsetJson, Record};
use backend_mongo::dnssec_store::FullNode;
use backend_mongo::EditSummary;
use dns::edit::{Edited, RecordEdit};
use dns::presentation::{parse_rdata, rdata_text};
use dns::{Name, RRset, RType};
use std::collections::BTreeSet;

/// Types the signer maintains (and RRSIG): not shown, not edited here.
const DNSSEC_TYPES: [RType; 7] = [
    RType::RRSIG,
    RType::NSEC,
    RType::NSEC3,
    RType::NSEC3PARAM,
    RType::DNSKEY,
    RType::CDS,
    RType::CDNSKEY,
];

/// A node's RRsets as the API shows them (only `only`'s, when given):
/// none for an NSEC3 node, DNSSEC records left out.
pub fn node_rrsets(node: &FullNode, only: Option<RType>) -> Vec<RRsetJson> {
    if node.nsec3 {
        return Vec::new();
    }
    node.rrsets
        .iter()
        .map(|signed| &signed.rrset)
        .filter(|r| !DNSSEC_TYPES.contains(&r.rtype))
        .filter(|r| only.is_none_or(|t| t == r.rtype))
        .map(|r| rrset_json(&node.name, r))
        .collect()
}

fn rrset_json(name: &Name, rrset: &RRset) -> RRsetJson {
    let records = rrset
        .rdata
        .iter()
        .map(|rd| Record {
            content: rdata_text(rrset.rtype, rd),
            disabled: false,
        })
        .collect();
    RRsetJson {
        name: name.to_string(),
        rtype: rrset.rtype.to_string(),
        ttl: rrset.ttl,
        records,
        comments: Vec::new(),
    }
}

/// The edits of one PATCH (or of the RRsets given with a new zone), every
/// change checked before anything is written.
pub fn edits_for(zone: &Name, changes: &[RRsetChange]) -> Result<Vec<RecordEdit>, ApiError> {
    let mut seen = BTreeSet::new();
    let mut edits = Vec::new();
    for change in changes {
        let name = owner(zone, &change.name)?;
        let rtype = editable_type(&change.rtype)?;
        if !seen.insert((name.clone(), rtype.0)) {
            return Err(ApiError::invalid(format!(
                "duplicate RRset {} {}",
                change.name, change.rtype
            )));
        }
        edits.push(edit_for(zone, name, rtype, change)?);
    }
    Ok(edits)
}

/// One change as an edit: REPLACE (the default) or DELETE.
fn edit_for(
    zone: &Name,
    name: Name,
    rtype: RType,
    change: &RRsetChange,
) -> Result<RecordEdit, ApiError> {
    let changetype = change.changetype.as_deref().unwrap_or("REPLACE");
    let deletes = changetype.eq_ignore_ascii_case("DELETE")
        || (changetype.eq_ignore_ascii_case("REPLACE") && change.records.is_empty());
    if deletes {
        if &name == zone && matches!(rtype, RType::SOA | RType::NS) {
            return Err(ApiError::invalid(format!(
                "the apex {rtype} RRset cannot be deleted"
            )));
        }
        return Ok(RecordEdit::DeleteRRset { name, rtype });
    }
    if !changetype.eq_ignore_ascii_case("REPLACE") {
        return Err(ApiError::invalid(format!(
            "changetype {changetype:?}: REPLACE or DELETE"
        )));
    }
    let rrset = replacement(zone, rtype, change)?;
    Ok(RecordEdit::ReplaceRRset { name, rrset })
}

/// The RRset a REPLACE asks for, each content parsed as presentation rdata.
fn replacement(zone: &Name, rtype: RType, change: &RRsetChange) -> Result<RRset, ApiError> {
    let ttl = change.ttl.ok_or_else(|| {
        ApiError::invalid(format!(
            "{} {}: REPLACE needs a ttl",
            change.name, change.rtype
        ))
    })?;
    let mut rdata = Vec::new();
    for record in &change.records {
        if record.disabled {
            return Err(ApiError::invalid("disabled records are not supported"));
        }
        let rd = parse_rdata(rtype, &record.content, zone).map_err(|e| {
            ApiError::invalid(format!(
                "{} {}: bad content {:?}: {e}",
                change.name, change.rtype, record.content
            ))
        })?;
        rdata.push(rd.into_boxed_slice());
    }
    Ok(RRset { rtype, ttl, rdata })
}

/// An owner name inside `zone` (absolute, or relative to the zone).
pub fn owner(zone: &Name, text: &str) -> Result<Name, ApiError> {
    let name = Name::parse(text, Some(zone))
        .map_err(|e| ApiError::invalid(format!("bad name {text:?}: {e}")))?;
    match name.is_subdomain_of(zone) {
        true => Ok(name),
        false => Err(ApiError::invalid(format!(
            "name {text:?} is not in zone {zone}"
        ))),
    }
}

/// A type the API may edit: known, not a meta type, not DNSSEC.
fn editable_type(text: &str) -> Result<RType, ApiError> {
    let rtype = RType::from_mnemonic(&text.to_ascii_uppercase())
        .filter(|t| !t.is_meta())
        .ok_or_else(|| ApiError::invalid(format!("unknown type {text:?}")))?;
    match DNSSEC_TYPES.contains(&rtype) {
        true => Err(ApiError::invalid(format!(
            "{rtype} records are maintained by mongodns-sign"
        ))),
        false => Ok(rtype),
    }
}

/// The edits RFC 2136's rules left out, as one 422 (the rest of the
/// change-set is applied, as in DNS UPDATE).
pub fn refused_edits(edits: &[RecordEdit], summary: &EditSummary) -> Result<(), ApiError> {
    let refused: Vec<String> = edits
        .iter()
        .zip(&summary.outcomes)
        .filter_map(|(edit, outcome)| match outcome {
            Edited::Ignored(why) => Some(format!("{}: {why}", edit.name())),
            _ => None,
        })
        .collect();
    match refused.is_empty() {
        true => Ok(()),
        false => Err(ApiError::invalid(format!(
            "not changed: {}",
            refused.join("; ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(name: &str, rtype: &str, changetype: &str, contents: &[&str]) -> RRsetChange {
        RRsetChange {
            name: name.into(),
            rtype: rtype.into(),
            ttl: Some(60),
            changetype: Some(changetype.into()),
            records: contents
                .iter()
                .map(|c| Record {
                    content: (*c).into(),
                    disabled: false,
                })
                .collect(),
        }
    }

    fn zone() -> Name {
        "api.test.".parse().unwrap()
    }

    #[test]
    fn replace_and_delete_become_one_change_set() {
        let changes = [
            change("www.api.test.", "A", "REPLACE", &["192.0.2.1", "192.0.2.2"]),
            change("old.api.test.", "a", "DELETE", &[]),
            change("gone.api.test.", "TXT", "REPLACE", &[]),
        ];
        let edits = edits_for(&zone(), &changes).unwrap();
        match &edits[0] {
            RecordEdit::ReplaceRRset { name, rrset } => {
                assert_eq!(name.to_string(), "www.api.test.");
                assert_eq!(
                    (rrset.rtype, rrset.ttl, rrset.rdata.len()),
                    (RType::A, 60, 2)
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            &edits[1],
            RecordEdit::DeleteRRset {
                rtype: RType::A,
                ..
            }
        ));
        assert!(matches!(
            &edits[2],
            RecordEdit::DeleteRRset {
                rtype: RType::TXT,
                ..
            }
        ));
    }

    #[test]
    fn invalid_changes_are_refused_before_writing() {
        let refused = |c: RRsetChange| edits_for(&zone(), &[c]).unwrap_err().message;
        let bad = refused(change("a.api.test.", "A", "REPLACE", &["300.0.0.1"]));
        assert!(bad.contains("bad content"), "{bad}");
        let outside = refused(change("a.other.test.", "A", "REPLACE", &["192.0.2.1"]));
        assert!(outside.contains("not in zone"), "{outside}");
        assert!(refused(change("a.api.test.", "BOGUS", "REPLACE", &["x"])).contains("unknown type"));
        assert!(refused(change("a.api.test.", "RRSIG", "DELETE", &[])).contains("mongodns-sign"));
        assert!(refused(change("api.test.", "NS", "DELETE", &[])).contains("apex NS"));
        assert!(
            refused(change("a.api.test.", "A", "EXTEND", &["192.0.2.1"])).contains("changetype")
        );
        let mut no_ttl = change("a.api.test.", "A", "REPLACE", &["192.0.2.1"]);
        no_ttl.ttl = None;
        assert!(refused(no_ttl).contains("ttl"));
        let twice = [
            change("a.api.test.", "A", "REPLACE", &["192.0.2.1"]),
            change("a.api.test.", "A", "DELETE", &[]),
        ];
        assert!(edits_for(&zone(), &twice)
            .unwrap_err()
            .message
            .contains("duplicate"));
    }
}
