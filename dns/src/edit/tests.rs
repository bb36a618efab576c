//! The RFC 2136 §3.4.2 rules of `NodeEdit`, one case each.

use super::*;

fn n(s: &str) -> Name {
    s.parse().unwrap()
}

fn rrset(t: RType, ttl: u32, rds: &[&[u8]]) -> RRset {
    RRset {
        rtype: t,
        ttl,
        rdata: rds.iter().map(|r| r.to_vec().into_boxed_slice()).collect(),
    }
}

fn soa(serial: u32) -> Vec<u8> {
    let mut rd = b"\x02ns\x00\x02hm\x00".to_vec();
    for v in [serial, 3600, 600, 86400, 300] {
        rd.extend_from_slice(&v.to_be_bytes());
    }
    rd
}

fn apex_node() -> NodeEdit {
    let stored = vec![
        rrset(RType::SOA, 3600, &[&soa(10)]),
        rrset(RType::NS, 3600, &[b"\x02ns\x00", b"\x03ns2\x00"]),
        rrset(RType::MX, 300, &[b"\x00\x0a\x02mx\x00"]),
    ];
    NodeEdit::new(&n("example."), &n("example."), stored, false)
}

fn add(name: &str, r: RRset) -> RecordEdit {
    RecordEdit::Add {
        name: n(name),
        rrset: r,
    }
}

#[test]
fn adds_merge_into_the_rrset_and_set_its_ttl() {
    let mut e = NodeEdit::new(&n("example."), &n("www.example."), Vec::new(), false);
    assert_eq!(
        e.apply(&add("www.example.", rrset(RType::A, 60, &[&[1, 2, 3, 4]]))),
        Edited::Changed
    );
    assert_eq!(
        e.apply(&add(
            "www.example.",
            rrset(RType::A, 120, &[&[1, 2, 3, 4], &[5, 6, 7, 8]])
        )),
        Edited::Changed
    );
    assert_eq!(
        e.after(),
        &[rrset(RType::A, 120, &[&[1, 2, 3, 4], &[5, 6, 7, 8]])]
    );
    // The same records again: nothing to do.
    assert_eq!(
        e.apply(&add("www.example.", rrset(RType::A, 120, &[&[5, 6, 7, 8]]))),
        Edited::Unchanged
    );
    match e.writes()[0].1 {
        RRsetWrite::Delta { add, remove, ttl } => {
            assert_eq!(add.len(), 2);
            assert!(remove.is_empty());
            assert_eq!(*ttl, Some(120));
        }
        w => panic!("an add is a delta, not {w:?}"),
    }
}

#[test]
fn deleting_records_keeps_the_rest_and_empties_the_name() {
    let stored = vec![rrset(RType::A, 60, &[&[1, 1, 1, 1], &[2, 2, 2, 2]])];
    let mut e = NodeEdit::new(&n("example."), &n("a.example."), stored, false);
    let del = |rd: &[u8]| RecordEdit::DeleteRecords {
        name: n("a.example."),
        rtype: RType::A,
        rdata: vec![rd.to_vec().into_boxed_slice()],
    };
    assert_eq!(e.apply(&del(&[9, 9, 9, 9])), Edited::Unchanged);
    assert_eq!(e.apply(&del(&[1, 1, 1, 1])), Edited::Changed);
    assert!(!e.is_empty());
    assert_eq!(e.apply(&del(&[2, 2, 2, 2])), Edited::Changed);
    assert!(e.is_empty());
    assert!(e.after().is_empty());
}

#[test]
fn a_delete_then_an_add_is_a_set() {
    let stored = vec![rrset(RType::TXT, 60, &[b"\x01a"])];
    let mut e = NodeEdit::new(&n("example."), &n("t.example."), stored, false);
    let del = RecordEdit::DeleteRRset {
        name: n("t.example."),
        rtype: RType::TXT,
    };
    assert_eq!(e.apply(&del), Edited::Changed);
    assert_eq!(
        e.apply(&add("t.example.", rrset(RType::TXT, 30, &[b"\x01b"]))),
        Edited::Changed
    );
    assert_eq!(
        *e.writes()[0].1,
        RRsetWrite::Set(rrset(RType::TXT, 30, &[b"\x01b"]))
    );
}

#[test]
fn the_apex_keeps_its_soa_and_ns() {
    let mut e = apex_node();
    let del = |t| RecordEdit::DeleteRRset {
        name: n("example."),
        rtype: t,
    };
    assert_eq!(
        e.apply(&del(RType::SOA)),
        Edited::Ignored(Ignored::ApexSoaOrNs)
    );
    assert_eq!(
        e.apply(&del(RType::NS)),
        Edited::Ignored(Ignored::ApexSoaOrNs)
    );
    let last_two = RecordEdit::DeleteRecords {
        name: n("example."),
        rtype: RType::NS,
        rdata: vec![
            b"\x02ns\x00".to_vec().into(),
            b"\x03ns2\x00".to_vec().into(),
        ],
    };
    assert_eq!(e.apply(&last_two), Edited::Ignored(Ignored::LastApexNs));
    let one = RecordEdit::DeleteRecords {
        name: n("example."),
        rtype: RType::NS,
        rdata: vec![b"\x03ns2\x00".to_vec().into()],
    };
    assert_eq!(e.apply(&one), Edited::Changed);
    assert_eq!(
        e.apply(&RecordEdit::DeleteName {
            name: n("example.")
        }),
        Edited::Changed
    );
    let kept: Vec<RType> = e.after().iter().map(|r| r.rtype).collect();
    assert_eq!(kept, vec![RType::SOA, RType::NS]);
}

#[test]
fn an_soa_is_replaced_only_by_a_later_serial() {
    let mut e = apex_node();
    let older = add("example.", rrset(RType::SOA, 3600, &[&soa(10)]));
    assert_eq!(e.apply(&older), Edited::Ignored(Ignored::SoaNotNewer));
    let newer = add("example.", rrset(RType::SOA, 3600, &[&soa(11)]));
    assert_eq!(e.apply(&newer), Edited::Changed);
    assert_eq!(e.after()[e.after().len() - 1].rdata[0][..], soa(11)[..]);
    let mut www = NodeEdit::new(&n("example."), &n("www.example."), Vec::new(), false);
    assert_eq!(www.apply(&newer), Edited::Ignored(Ignored::SoaOutsideApex));
}

#[test]
fn a_cname_stands_alone() {
    let mut e = NodeEdit::new(&n("example."), &n("c.example."), Vec::new(), false);
    let cname = |target: &[u8]| add("c.example.", rrset(RType::CNAME, 60, &[target]));
    assert_eq!(e.apply(&cname(b"\x01x\x00")), Edited::Changed);
    // A second CNAME replaces the first.
    assert_eq!(e.apply(&cname(b"\x01y\x00")), Edited::Changed);
    assert_eq!(e.after(), &[rrset(RType::CNAME, 60, &[b"\x01y\x00"])]);
    let a = add("c.example.", rrset(RType::A, 60, &[&[1, 2, 3, 4]]));
    assert_eq!(e.apply(&a), Edited::Ignored(Ignored::CnameConflict));
    let mut other = NodeEdit::new(&n("example."), &n("d.example."), Vec::new(), false);
    assert_eq!(
        other.apply(&add("d.example.", rrset(RType::A, 60, &[&[1, 2, 3, 4]]))),
        Edited::Changed
    );
    let c = add("d.example.", rrset(RType::CNAME, 60, &[b"\x01x\x00"]));
    assert_eq!(other.apply(&c), Edited::Ignored(Ignored::CnameConflict));
}

#[test]
fn the_signers_types_are_not_edited_in_any_zone() {
    let mut e = NodeEdit::new(&n("example."), &n("example."), Vec::new(), true);
    let sig = add("example.", rrset(RType::RRSIG, 60, &[&[0; 20]]));
    assert_eq!(
        e.apply(&sig),
        Edited::Ignored(Ignored::SignerOwned(RType::RRSIG))
    );
    let key = add("example.", rrset(RType::DNSKEY, 60, &[&[1, 0, 3, 13, 9]]));
    assert_eq!(
        e.apply(&key),
        Edited::Ignored(Ignored::SignerOwned(RType::DNSKEY))
    );
    // Unsigned: a DNSKEY or NSEC3PARAM at the apex would make servers
    // take the zone for signed.
    for t in [47, 48, 50, 51, 59, 60, 46].map(RType) {
        let mut plain = NodeEdit::new(&n("example."), &n("example."), Vec::new(), false);
        let edit = add("example.", rrset(t, 60, &[&[1, 0, 3, 13, 9]]));
        assert_eq!(plain.apply(&edit), Edited::Ignored(Ignored::SignerOwned(t)));
        let replace = RecordEdit::ReplaceRRset {
            name: n("example."),
            rrset: rrset(t, 60, &[&[1, 0, 3, 13, 9]]),
        };
        assert_eq!(
            plain.apply(&replace),
            Edited::Ignored(Ignored::SignerOwned(t))
        );
        assert!(plain.after().is_empty(), "{t}");
    }
}

#[test]
fn deleting_a_secured_name_leaves_the_chain_to_the_signer() {
    let stored = vec![
        rrset(RType::A, 60, &[&[1, 2, 3, 4]]),
        rrset(RType::NSEC, 60, &[b"\x01b\x07example\x00\x00\x01\x40"]),
    ];
    let mut e = NodeEdit::new(&n("example."), &n("a.example."), stored, true);
    assert_eq!(
        e.apply(&RecordEdit::DeleteName {
            name: n("a.example.")
        }),
        Edited::Changed
    );
    assert!(e.is_empty());
    assert_eq!(
        e.after().len(),
        1,
        "the NSEC stays for the signer to unlink"
    );
    assert_eq!(e.writes().len(), 1);
}

#[test]
fn replace_with_nothing_deletes_and_replace_is_a_set() {
    let stored = vec![rrset(RType::MX, 60, &[b"\x00\x01\x01m\x00"])];
    let mut e = NodeEdit::new(&n("example."), &n("m.example."), stored, false);
    let to = |rds: &[&[u8]]| RecordEdit::ReplaceRRset {
        name: n("m.example."),
        rrset: rrset(RType::MX, 60, rds),
    };
    assert_eq!(e.apply(&to(&[b"\x00\x01\x01m\x00"])), Edited::Unchanged);
    assert_eq!(
        e.apply(&to(&[b"\x00\x02\x01n\x00", b"\x00\x02\x01n\x00"])),
        Edited::Changed
    );
    assert_eq!(
        *e.writes()[0].1,
        RRsetWrite::Set(rrset(RType::MX, 60, &[b"\x00\x02\x01n\x00"]))
    );
    assert_eq!(e.apply(&to(&[])), Edited::Changed);
    assert_eq!(e.writes(), vec![(RType::MX, &RRsetWrite::Remove)]);
    assert!(e.is_empty());
}

#[test]
fn edits_that_undo_each_other_write_nothing() {
    let stored = vec![rrset(RType::A, 60, &[&[1, 1, 1, 1]])];
    let mut e = NodeEdit::new(&n("example."), &n("u.example."), stored, false);
    assert_eq!(
        e.apply(&add("u.example.", rrset(RType::A, 60, &[&[2, 2, 2, 2]]))),
        Edited::Changed
    );
    let del = RecordEdit::DeleteRecords {
        name: n("u.example."),
        rtype: RType::A,
        rdata: vec![vec![2, 2, 2, 2].into()],
    };
    assert_eq!(e.apply(&del), Edited::Changed);
    assert!(e.writes().is_empty(), "{:?}", e.writes());
}
