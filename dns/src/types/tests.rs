//! The table's own rules: sorted, unique, every lookup agrees with it,
//! and the flags the server and the signer rely on.

use super::*;
use crate::RType;

#[test]
fn the_table_is_sorted_unique_and_indexed() {
    assert!(TYPES.len() < usize::from(u8::MAX));
    for pair in TYPES.windows(2) {
        assert!(pair[0].number < pair[1].number, "{:?}", pair[1].mnemonic);
    }
    for t in TYPES {
        assert_eq!(info(t.number), Some(t), "{}", t.mnemonic);
        assert_eq!(by_mnemonic(&t.mnemonic.to_lowercase()), Some(t));
        assert_eq!(RType(t.number).name(), Some(t.mnemonic));
    }
    for n in [0, 23, 27, 38, 100, 260, 511, 512, 32768, 65280, 65535] {
        assert_eq!(info(n), None, "{n}");
    }
    assert_eq!(info(32769).map(|t| t.mnemonic), Some("DLV"));
}

#[test]
fn only_rfc_1035_names_compress() {
    let compressed: Vec<&str> = TYPES
        .iter()
        .filter(|t| t.compress)
        .map(|t| t.mnemonic)
        .collect();
    assert_eq!(
        compressed,
        ["NS", "MD", "MF", "CNAME", "SOA", "MB", "MG", "MR", "PTR", "MINFO", "MX"]
    );
    // A compressed layout is names and fixed-width fields only: the reply
    // writer walks it by widths.
    for t in TYPES.iter().filter(|t| t.compress) {
        let Rdata::Fields(fields) = t.rdata else {
            panic!("{}", t.mnemonic)
        };
        for f in fields {
            assert!(
                matches!(f, Field::Name(_)) || f.width().is_some(),
                "{}",
                t.mnemonic
            );
        }
    }
}

#[test]
fn ns_mx_and_srv_targets_get_addresses() {
    let with: Vec<(&str, Option<usize>)> = TYPES
        .iter()
        .filter(|t| t.additional.is_some())
        .map(|t| (t.mnemonic, t.target_at()))
        .collect();
    assert_eq!(with, [("NS", Some(0)), ("MX", Some(2)), ("SRV", Some(6))]);
    assert_eq!(RType::A.info().and_then(TypeInfo::target_at), None);
}

#[test]
fn canonical_form_lower_cases_rfc_4034_types() {
    // RFC 4034 §6.2 as RFC 6840 §5.1 amends it (NSEC left out); A6 is
    // not a type here. HINFO carries no name.
    let lowered: Vec<u16> = TYPES
        .iter()
        .filter(|t| t.canonical)
        .map(|t| t.number)
        .collect();
    assert_eq!(
        lowered,
        [2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 15, 17, 18, 21, 24, 26, 30, 33, 35, 36, 39, 46]
    );
    for t in TYPES.iter().filter(|t| t.canonical) {
        let Rdata::Fields(fields) = t.rdata else {
            panic!("{}", t.mnemonic)
        };
        assert!(fields.iter().any(|f| matches!(f, Field::Name(_))));
    }
}

#[test]
fn every_type_knot_or_nsd_reads_has_a_syntax() {
    // Read from a zone file by Knot DNS 3.2 or NSD 4.6 (each checked with
    // `knotc zone-check` and `nsd-checkzone`); NULL only in RFC 3597 form.
    let loaded = [
        "A",
        "NS",
        "MD",
        "MF",
        "CNAME",
        "SOA",
        "MB",
        "MG",
        "MR",
        "WKS",
        "PTR",
        "HINFO",
        "MINFO",
        "MX",
        "TXT",
        "RP",
        "AFSDB",
        "X25",
        "ISDN",
        "RT",
        "NSAP",
        "SIG",
        "KEY",
        "PX",
        "AAAA",
        "LOC",
        "NXT",
        "SRV",
        "NAPTR",
        "KX",
        "CERT",
        "DNAME",
        "APL",
        "DS",
        "SSHFP",
        "IPSECKEY",
        "RRSIG",
        "NSEC",
        "DNSKEY",
        "DHCID",
        "NSEC3",
        "NSEC3PARAM",
        "TLSA",
        "SMIMEA",
        "CDS",
        "CDNSKEY",
        "OPENPGPKEY",
        "CSYNC",
        "ZONEMD",
        "SVCB",
        "HTTPS",
        "SPF",
        "NID",
        "L32",
        "L64",
        "LP",
        "EUI48",
        "EUI64",
        "URI",
        "CAA",
        "AVC",
        "DLV",
    ];
    for m in loaded {
        let t = by_mnemonic(m).unwrap_or_else(|| panic!("{m} is not in the table"));
        assert_ne!(t.rdata, Rdata::Opaque, "{m}");
    }
    assert_eq!(by_mnemonic("NULL").map(|t| t.rdata), Some(Rdata::Opaque));
}
