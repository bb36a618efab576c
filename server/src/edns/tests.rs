//! The EDNS room's parser and writer against hand-built messages: what a
//! query's OPT gives, which OPTs make a query FORMERR or BADVERS, and that
//! the packet cache's reader agrees with the query parser.

use super::options::{Asked, OPTION_EDE, OPTION_EXPIRE, OPTION_NSID};
use super::reply::{add_option, write_opt, OPT_LEN};
use super::request::{opt_ending_at, OptHeader};
use super::*;
use crate::wire::{parse_query, QueryError, Rcode};

/// A query for `example. A` with `records` (whole records) counted in
/// `counts` (answer, authority, additional).
fn message(counts: [u16; 3], records: &[u8]) -> Vec<u8> {
    let mut p = vec![0xAB, 0xCD, 0x01, 0x00, 0, 1];
    for c in counts {
        p.extend_from_slice(&c.to_be_bytes());
    }
    p.extend_from_slice(b"\x07example\x00\x00\x01\x00\x01");
    p.extend_from_slice(records);
    p
}

/// An OPT record: UDP `size`, `version`, DO as given, `options`.
fn opt(size: u16, version: u8, dnssec_ok: bool, options: &[u8]) -> Vec<u8> {
    let mut o = vec![0, 0, 41];
    o.extend_from_slice(&size.to_be_bytes());
    o.extend_from_slice(&[0, version, if dnssec_ok { 0x80 } else { 0 }, 0]);
    o.extend_from_slice(&(options.len() as u16).to_be_bytes());
    o.extend_from_slice(options);
    o
}

/// One option: `code`, then `data` with its length.
fn option(code: u16, data: &[u8]) -> Vec<u8> {
    let mut o = code.to_be_bytes().to_vec();
    o.extend_from_slice(&(data.len() as u16).to_be_bytes());
    o.extend_from_slice(data);
    o
}

/// A query with `opt` as its one additional record.
fn with_opt(opt: &[u8]) -> Vec<u8> {
    message([0, 0, 1], opt)
}

/// The rcode and reply EDNS a query gets from the parser, or its EDNS.
fn outcome(p: &[u8]) -> Result<Option<Edns>, (Rcode, Option<Edns>)> {
    match parse_query(p) {
        Ok(q) => Ok(q.edns),
        Err(QueryError::Reply { rcode, edns, .. }) => Err((rcode, edns)),
        Err(QueryError::Drop) => panic!("dropped"),
    }
}

#[test]
fn the_fields_and_known_options_are_read_once() {
    let cookie = option(10, &[1, 2, 3, 4, 5, 6, 7, 8]);
    let nsid = option(OPTION_NSID, &[]);
    let options = [cookie, nsid].concat();
    let edns = outcome(&with_opt(&opt(1232, 0, true, &options))).unwrap();
    let want = Edns {
        udp_size: 1232,
        version: 0,
        dnssec_ok: true,
        asked: Asked {
            nsid: true,
            expire: false,
        },
    };
    assert_eq!(edns, Some(want));
    let q = parse_query(&with_opt(&opt(1232, 0, true, &options))).unwrap();
    assert!(q.asked().nsid && !q.asked().expire);
    assert_eq!(
        parse_query(&message([0; 3], &[])).unwrap().asked(),
        Asked::default()
    );
    // A size below 512 counts as 512 (RFC 6891 §6.2.5); DO clear.
    let small = outcome(&with_opt(&opt(100, 0, false, &[])))
        .unwrap()
        .unwrap();
    assert_eq!((small.udp_size, small.dnssec_ok), (512, false));
    let expire = option(OPTION_EXPIRE, &[]);
    let e = outcome(&with_opt(&opt(4096, 0, false, &expire))).unwrap();
    assert!(e.unwrap().asked.expire);
}

#[test]
fn unknown_options_are_ignored() {
    let options = [
        option(8, &[0, 1, 24, 0, 192, 0, 2]), // client subnet
        option(10, &[9; 8]),                  // client cookie
        option(11, &[]),                      // TCP keepalive
        option(12, &[0; 40]),                 // padding
        option(65001, &[0xFF; 3]),            // local use
        option(OPTION_NSID, &[0, 3, 0, 0]),   // NSID hiding an "NSID" inside
    ]
    .concat();
    let edns = outcome(&with_opt(&opt(1232, 0, false, &options))).unwrap();
    assert_eq!(
        edns.unwrap().asked,
        Asked {
            nsid: true,
            expire: false
        }
    );
    // An NSID code inside another option's data is not an option.
    let inside = option(10, &[0, 3, 0, 0, 0, 9, 0, 0]);
    let edns = outcome(&with_opt(&opt(1232, 0, false, &inside))).unwrap();
    assert_eq!(edns.unwrap().asked, Asked::default());
}

#[test]
fn malformed_opts_are_formerr_without_opt() {
    let formerr = Err((Rcode::FORMERR, None));
    let plain = opt(1232, 0, false, &[]);
    // Two OPT records.
    let two = [plain.clone(), plain.clone()].concat();
    assert_eq!(outcome(&message([0, 0, 2], &two)), formerr);
    // An OPT in the answer or authority section.
    assert_eq!(outcome(&message([1, 0, 0], &plain)), formerr);
    assert_eq!(outcome(&message([0, 1, 0], &plain)), formerr);
    // An owner other than the root.
    let mut owned = b"\x01a".to_vec();
    owned.extend_from_slice(&plain);
    assert_eq!(outcome(&with_opt(&owned)), formerr);
    // An option whose length runs past the rdata, and a cut option header.
    let lying = [0, 10, 0, 40, 1, 2, 3, 4];
    assert_eq!(outcome(&with_opt(&opt(1232, 0, false, &lying))), formerr);
    assert_eq!(
        outcome(&with_opt(&opt(1232, 0, false, &[0, 10, 0]))),
        formerr
    );
    // A second OPT after a malformed one is still FORMERR.
    let bad_then_good = [opt(1232, 0, false, &[0, 3]), plain].concat();
    assert_eq!(outcome(&message([0, 0, 2], &bad_then_good)), formerr);
}

#[test]
fn other_versions_get_badvers_with_their_edns() {
    let v1 = outcome(&with_opt(&opt(1232, 1, true, &[])));
    let (rcode, edns) = v1.unwrap_err();
    assert_eq!(rcode, Rcode::BADVERS);
    let edns = edns.expect("BADVERS carries an OPT");
    assert_eq!((edns.version, edns.dnssec_ok), (1, true));
    assert!(!edns.known_version());
    // Malformed options outrank the version: FORMERR.
    let cut = opt(1232, 1, false, &[0, 3, 0, 9]);
    assert_eq!(outcome(&with_opt(&cut)), Err((Rcode::FORMERR, None)));
}

#[test]
fn the_packet_caches_reader_agrees_with_the_parser() {
    let at = message([0; 3], &[]).len();
    let shapes = [
        opt(1232, 0, false, &[]),
        opt(4096, 0, true, &option(OPTION_NSID, &[])),
        opt(
            100,
            0,
            false,
            &[option(10, &[7; 16]), option(9, &[])].concat(),
        ),
        opt(1232, 2, false, &[]),
    ];
    for o in &shapes {
        let p = with_opt(o);
        let parsed = match outcome(&p) {
            Ok(edns) => edns,
            Err((_, edns)) => edns,
        };
        assert_eq!(opt_ending_at(&p, at), parsed, "{o:?}");
    }
    // Not one: trailing bytes, a cut option, an owner, too short.
    let mut trailing = with_opt(&shapes[0]);
    trailing.push(0);
    assert_eq!(opt_ending_at(&trailing, at), None);
    assert_eq!(
        opt_ending_at(&with_opt(&opt(512, 0, false, &[0, 3])), at),
        None
    );
    assert_eq!(opt_ending_at(&with_opt(&[1]), at), None);
    let header = OptHeader::at(&with_opt(&shapes[1]), at).unwrap();
    assert_eq!((header.udp_size, header.dnssec_ok), (4096, true));
    assert_eq!(OptHeader::at(&with_opt(&shapes[1][..8]), at), None);
}

#[test]
fn a_replys_opt_is_written_once_and_grows_within_its_limit() {
    let query = Edns {
        udp_size: 4096,
        version: 0,
        dnssec_ok: true,
        asked: Asked {
            nsid: true,
            expire: true,
        },
    };
    let e = reply_edns(query);
    assert_eq!((e.version, e.asked), (0, Asked::default()));
    let mut buf = Vec::new();
    write_opt(&mut buf, 1232, Rcode::BADVERS, e, None);
    assert_eq!(buf, [0, 0, 41, 0x04, 0xD0, 1, 0, 0x80, 0, 0, 0]);
    assert_eq!(buf.len(), OPT_LEN);
    let mut with_ede = Vec::new();
    write_opt(&mut with_ede, 512, Rcode::REFUSED, e, Some(20));
    assert_eq!(&with_ede[5..], [0, 0, 0x80, 0, 0, 6, 0, 15, 0, 2, 0, 20]);
    // Options added to a finished reply: after those there, within limit.
    let mut reply = message([0, 0, 1], &with_ede);
    reply[2] |= 0x80;
    let before = reply.clone();
    assert!(!add_option(
        &mut reply,
        OPTION_NSID,
        b"ns1",
        before.len() + 6
    ));
    assert_eq!(reply, before);
    decorate(
        &mut reply,
        query.asked,
        Offer {
            nsid: Some(b"ns1"),
            expire: Some(7),
        },
        9999,
    );
    assert!(add_ede(&mut reply, options::EDE_STALE_ANSWER, 9999));
    let tail = &reply[before.len() - 6..];
    let want = [
        option(OPTION_EDE, &[0, 20]),
        option(OPTION_NSID, b"ns1"),
        option(OPTION_EXPIRE, &7u32.to_be_bytes()),
        option(OPTION_EDE, &[0, 3]),
    ]
    .concat();
    assert_eq!(tail, &want[..]);
    let rdlen_at = before.len() - 8;
    assert_eq!(usize::from(reply[rdlen_at + 1]), want.len());
    // Nothing asked, nothing added; no OPT, no option.
    let mut plain = before.clone();
    decorate(
        &mut plain,
        Asked::default(),
        Offer {
            nsid: Some(b"x"),
            expire: Some(1),
        },
        9999,
    );
    assert_eq!(plain, before);
    let mut bare = message([0; 3], &[]);
    assert!(!add_ede(&mut bare, 3, 9999));
}
