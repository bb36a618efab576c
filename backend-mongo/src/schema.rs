//! The documents mongodns stores, and their conversion to and from values.
//!
//! ```text
//!  zones   { _id: "example.com.", ver, serial, gen, pending_ver? , updated }
//!  nodes   { _id: "example.com. 3 www.example.com.", zone, ver, name, ck,
//!            rrsets: { A: { ttl, rd: [BinData…] }, MX: {…} } }
//!  meta    { _id: "seq", seq }          global change counter
//! ```
//!
//! `docs/schema.md` is the prose version of this file and the contract for
//! other programs; keep the two in step.

use crate::{Name, RType};
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use std::sync::Arc;

/// Collection of zone documents.
pub const ZONES: &str = "zones";
/// Collection of node documents (one per owner name per zone version).
pub const NODES: &str = "nodes";
/// Collection of global counters.
pub const META: &str = "meta";
/// `_id` of the global change counter in [`META`].
pub const SEQ_ID: &str = "seq";
/// Collection of change records: which names a merge write changed, one
/// document per generation it published (see [`change_id`]).
pub const CHANGES: &str = "changes";
/// Most names one change record lists; a larger write records "all".
pub const MAX_CHANGED_NAMES: usize = 4096;

/// Field of a deleted zone's tombstone: true.
pub const DELETED: &str = "deleted";

/// Field of a deleted zone's tombstone: the version it served last (a zone
/// created again with the same name numbers its versions above it).
pub const LAST_VER: &str = "last_ver";

/// The `_id` of the change record of generation `gen` (a `meta.seq` value).
pub fn change_id(gen: i64) -> String {
    format!("chg {gen}")
}

/// The generation of a change record's `_id` (the inverse of [`change_id`]).
pub fn change_gen(id: &str) -> Option<i64> {
    id.strip_prefix("chg ")?.parse().ok()
}

/// The `_id` of a node: zone, content version and owner name, space-separated.
///
/// Names are in the escaped presentation form of [`Name`]'s `Display`, which
/// never contains a raw space, so the key is unambiguous.
pub fn node_id(zone: &Name, ver: i64, name: &Name) -> String {
    format!("{zone} {ver} {name}")
}

/// The change record document of generation `gen` (`signed`: see
/// [`ChangeRecord::signed`]).
pub fn change_doc(gen: i64, zone: &Name, names: Option<&[Name]>, signed: bool) -> Document {
    let mut d = doc! {
        "_id": change_id(gen),
        "zone": zone.to_string(),
        "at": mongodb::bson::DateTime::now(),
    };
    if signed {
        d.insert("signed", true);
    }
    match names {
        Some(names) if names.len() <= MAX_CHANGED_NAMES => {
            let list: Vec<Bson> = names.iter().map(|n| Bson::String(n.to_string())).collect();
            d.insert("names", list);
        }
        _ => {
            d.insert("all", true);
        }
    }
    d
}

/// Reads a change record; `None` when it cannot be understood (a reader
/// then treats the generation as unknown and drops everything of it).
pub fn change_from_doc(d: &Document) -> Option<ChangeRecord> {
    let zone: Name = d.get_str("zone").ok()?.parse().ok()?;
    let signed = d.get_bool("signed").unwrap_or(false);
    if d.get_bool("all").unwrap_or(false) {
        return Some(ChangeRecord {
            zone,
            names: None,
            signed,
        });
    }
    let names = d
        .get_array("names")
        .ok()?
        .iter()
        .map(|b| b.as_str().and_then(|s| s.parse().ok()))
        .collect::<Option<Vec<Name>>>()?;
    Some(ChangeRecord {
        zone,
        names: Some(names),
        signed,
    })
}

/// The model's values this schema stores and reads (the `dns` crate's).
pub use dns::{ChangeRecord, Node, RRset, ZoneInfo};

/// A document could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("malformed document {id}: {reason}")]
pub struct SchemaError {
    /// The `_id` of the document.
    pub id: String,
    /// What was wrong.
    pub reason: String,
}

fn bad(id: &str, reason: impl Into<String>) -> SchemaError {
    SchemaError {
        id: id.to_string(),
        reason: reason.into(),
    }
}

pub(crate) fn int_field(d: &Document, key: &str) -> Option<i64> {
    bson_int(d.get(key)?)
}

/// A whole number stored as any BSON number type.
pub(crate) fn bson_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 => Some(*v as i64),
        _ => None,
    }
}

/// Decodes a zone document.
pub fn zone_from_doc(d: &Document) -> Result<ZoneInfo, SchemaError> {
    let id = d
        .get_str("_id")
        .map_err(|_| bad("?", "_id is not a string"))?;
    let apex: Name = id
        .parse()
        .map_err(|e| bad(id, format!("bad zone name: {e}")))?;
    let ver = int_field(d, "ver").ok_or_else(|| bad(id, "missing ver"))?;
    let gen = int_field(d, "gen").unwrap_or(0);
    let serial = int_field(d, "serial").unwrap_or(0) as u32;
    Ok(ZoneInfo {
        apex,
        ver,
        gen,
        serial,
    })
}

/// Decodes a node document.
pub fn node_from_doc(d: &Document) -> Result<Node, SchemaError> {
    let id = d.get_str("_id").unwrap_or("?");
    let name: Name = d
        .get_str("name")
        .map_err(|_| bad(id, "missing name"))?
        .parse()
        .map_err(|e| bad(id, format!("bad name: {e}")))?;
    let mut rrsets = Vec::new();
    let mut node_sigs = Vec::new();
    if let Ok(sets) = d.get_document("rrsets") {
        for (key, value) in sets {
            let rtype =
                RType::from_mnemonic(key).ok_or_else(|| bad(id, format!("unknown type {key}")))?;
            let set = value
                .as_document()
                .ok_or_else(|| bad(id, format!("rrsets.{key} is not a document")))?;
            let ttl = int_field(set, "ttl")
                .ok_or_else(|| bad(id, format!("rrsets.{key}.ttl missing")))?;
            let ttl = u32::try_from(ttl)
                .map_err(|_| bad(id, format!("rrsets.{key}.ttl out of range")))?;
            let rd = set
                .get_array("rd")
                .map_err(|_| bad(id, format!("rrsets.{key}.rd missing")))?;
            let mut rdata = Vec::with_capacity(rd.len());
            for item in rd {
                match item {
                    Bson::Binary(b) => rdata.push(checked(id, rtype, &b.bytes)?),
                    _ => return Err(bad(id, format!("rrsets.{key}.rd holds a non-binary value"))),
                }
            }
            if rdata.is_empty() {
                continue;
            }
            if let Ok(sigs) = set.get_array("sigs") {
                let sigs: Vec<Box<[u8]>> = sigs
                    .iter()
                    .filter_map(|b| match b {
                        Bson::Binary(b) => Some(checked(id, RType::RRSIG, &b.bytes)),
                        _ => None,
                    })
                    .collect::<Result<_, _>>()?;
                if !sigs.is_empty() {
                    node_sigs.push(Arc::new(RRset {
                        rtype: RType::RRSIG,
                        ttl,
                        rdata: sigs,
                    }));
                }
            }
            rrsets.push(Arc::new(RRset { rtype, ttl, rdata }));
        }
    }
    Ok(Node {
        name,
        rrsets,
        sigs: node_sigs,
    })
}

/// Stored rdata of `rtype`, once it is known to be well-formed: data read
/// from the database is never trusted (`crate::rdata`).
fn checked(id: &str, rtype: RType, bytes: &[u8]) -> Result<Box<[u8]>, SchemaError> {
    crate::rdata::check_rdata(rtype, bytes).map_err(|e| bad(id, e.to_string()))?;
    Ok(bytes.into())
}

/// BSON binary (subtype 0) holding `bytes`.
pub fn binary(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

/// A full node document, as an importer inserts it.
pub fn node_doc(zone: &Name, ver: i64, name: &Name, rrsets: &[RRset]) -> Document {
    let mut sets = Document::new();
    for set in rrsets {
        let rd: Vec<Bson> = set.rdata.iter().map(|r| binary(r)).collect();
        sets.insert(
            set.rtype.mnemonic().into_owned(),
            doc! { "ttl": i64::from(set.ttl), "rd": rd },
        );
    }
    doc! {
        "_id": node_id(zone, ver, name),
        "zone": zone.to_string(),
        "ver": ver,
        "name": name.to_string(),
        "ck": name.canonical_key(),
        "rrsets": sets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_documents_round_trip() {
        let zone: Name = "Example.COM.".parse().unwrap();
        let name: Name = "WWW.example.com.".parse().unwrap();
        let sets = vec![
            RRset {
                rtype: RType::A,
                ttl: 300,
                rdata: vec![Box::new([192, 0, 2, 1]), Box::new([192, 0, 2, 2])],
            },
            RRset {
                rtype: RType(65280),
                ttl: 60,
                rdata: vec![Box::new([1, 2, 3])],
            },
        ];
        let d = node_doc(&zone, 7, &name, &sets);
        assert_eq!(d.get_str("_id").unwrap(), "example.com. 7 www.example.com.");
        assert!(d.get_document("rrsets").unwrap().contains_key("TYPE65280"));
        let node = node_from_doc(&d).unwrap();
        assert_eq!(node.name, name);
        assert_eq!(node.rrset(RType::A).unwrap().rdata.len(), 2);
        assert_eq!(node.rrset(RType(65280)).unwrap().ttl, 60);
        assert!(node.rrset(RType::AAAA).is_none());
    }

    #[test]
    fn malformed_documents_are_errors_not_panics() {
        let d = doc! {"_id": "x", "name": "a.", "rrsets": {"A": {"ttl": -1, "rd": []}}};
        assert!(node_from_doc(&d).is_err());
        let d = doc! {"_id": "x", "name": "a.", "rrsets": {"BOGUS": {"ttl": 1, "rd": []}}};
        assert!(node_from_doc(&d).is_err());
        let d = doc! {"_id": "x", "name": "a.", "rrsets": {"A": {"ttl": 1, "rd": ["text"]}}};
        assert!(node_from_doc(&d).is_err());
        let d = doc! {"_id": "example.com."};
        assert!(zone_from_doc(&d).is_err());
    }

    #[test]
    fn malformed_rdata_makes_the_node_an_error() {
        let node = |rtype: &str, rd: &[u8]| {
            doc! {"_id": "x", "name": "a.", "rrsets": {rtype: {"ttl": 1, "rd": [binary(rd)]}}}
        };
        let long = dns::name::long_wire_name(256);
        let err = node_from_doc(&node("CNAME", &long)).unwrap_err();
        assert!(err.to_string().contains("CNAME"), "{err}");
        assert!(node_from_doc(&node("CNAME", &[0xC0, 0x0C])).is_err());
        assert!(node_from_doc(&node("SOA", b"\x01a\x00\x01b\x00\x00\x00")).is_err());
        assert!(node_from_doc(&node("CNAME", b"\x01b\x00")).is_ok());
        // Signatures are checked too.
        let d = doc! {"_id": "x", "name": "a.", "rrsets": {"A": {
        "ttl": 1, "rd": [binary(&[1, 2, 3, 4])], "sigs": [binary(&[0; 10])]}}};
        assert!(node_from_doc(&d).is_err());
    }
}
