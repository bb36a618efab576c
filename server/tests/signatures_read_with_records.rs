//! An RRSIG in a reply covers the records it is sent with, even when the
//! node changes between two reads of one answer.
//!
//! ```text
//!  FlippingApex: the apex of sig.test. as version 1 for the first N reads,
//!    then as version 2 (new SOA serial, new signatures), as a write landing
//!    while an answer is built would make it
//!  for N in 0..8: a NODATA question with DO ─► the reply's SOA serial and
//!    the marker in its RRSIG's signature name one version; so do the NSEC's
//! ```
//!
//! Before the fix, the denial's SOA came from one read of the apex and its
//! RRSIG from a later one: a signed merge landing between them gave "bad
//! RRSIG over SOA" (seen once in CI, `dnssec.rs`). No database here: the
//! point is the order of reads, which a real one cannot be made to hit.

use backend_mongo::StoreError;

use dns::{Name, Node, RRset, RType, ZoneInfo};
use hickory_proto::dnssec::rdata::DNSSECRData;
use hickory_proto::op::Message;
use hickory_proto::rr::{RData, Record, RecordType};
use mongodns_server::backend::Backend;
use mongodns_server::handler::Transport;
use mongodns_server::pipeline::{PipelineConfig, Responder};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `sig.test.` in wire form.
const APEX_WIRE: &[u8] = b"\x03sig\x04test\x00";

fn rrset(rtype: RType, rdata: Vec<u8>) -> Arc<RRset> {
    Arc::new(RRset {
        rtype,
        ttl: 300,
        rdata: vec![rdata.into()],
    })
}

/// SOA rdata with `serial`.
fn soa(serial: u32) -> Vec<u8> {
    let mut rd = b"\x02ns\x03sig\x04test\x00\x05admin\x03sig\x04test\x00".to_vec();
    for v in [serial, 3600, 600, 86400, 60] {
        rd.extend(v.to_be_bytes());
    }
    rd
}

/// An RRSIG over `covered` whose 64-byte signature is `marker` repeated.
fn rrsig(covered: RType, marker: u8) -> Arc<RRset> {
    let mut rd = covered.0.to_be_bytes().to_vec();
    rd.extend([13, 2]);
    for v in [300u32, 2_000_000_000, 1_700_000_000] {
        rd.extend(v.to_be_bytes());
    }
    rd.extend(4242u16.to_be_bytes());
    rd.extend(APEX_WIRE);
    rd.extend([marker; 64]);
    rrset(RType::RRSIG, rd)
}

/// The apex as version `v`: SOA serial `v`, every signature marked `v`.
fn apex(v: u8) -> Arc<Node> {
    let mut dnskey = vec![1, 1, 3, 13];
    dnskey.extend([7; 64]);
    // NSEC to itself: NS SOA RRSIG NSEC DNSKEY.
    let mut nsec = APEX_WIRE.to_vec();
    nsec.extend([0, 7, 0x22, 0, 0, 0, 0, 0x03, 0x80]);
    let sets = [
        (RType::SOA, soa(u32::from(v))),
        (RType::NS, b"\x02ns\x03sig\x04test\x00".to_vec()),
        (RType::DNSKEY, dnskey),
        (RType::NSEC, nsec),
    ];
    Arc::new(Node {
        name: Name::parse("sig.test.", None).unwrap(),
        rrsets: sets.iter().map(|(t, rd)| rrset(*t, rd.clone())).collect(),
        sigs: sets.iter().map(|(t, _)| rrsig(*t, v)).collect(),
    })
}

/// A one-node zone whose apex reads as version 1 `flip_after` times, then
/// as version 2.
struct FlippingApex {
    zone: ZoneInfo,
    reads: AtomicUsize,
    flip_after: usize,
}

impl FlippingApex {
    fn read(&self) -> Arc<Node> {
        match self.reads.fetch_add(1, Ordering::SeqCst) < self.flip_after {
            true => apex(1),
            false => apex(2),
        }
    }
}

impl Backend for FlippingApex {
    async fn find_zone(&self, apex: &Name) -> Result<Option<ZoneInfo>, StoreError> {
        Ok((*apex == self.zone.apex).then(|| self.zone.clone()))
    }

    async fn get_node(&self, _: &ZoneInfo, name: &Name) -> Result<Option<Arc<Node>>, StoreError> {
        Ok((*name == self.zone.apex).then(|| self.read()))
    }

    async fn zone_nodes(&self, _: &ZoneInfo) -> Result<Vec<Node>, StoreError> {
        Ok(vec![(*self.read()).clone()])
    }

    async fn denial(
        &self,
        _: &ZoneInfo,
        _: &str,
        _: bool,
    ) -> Result<Option<Arc<Node>>, StoreError> {
        Ok(Some(self.read()))
    }
}

/// A TXT question for the apex (NODATA), with DO set.
fn nodata_query() -> Vec<u8> {
    mongodns_testkit::build_query(7, "sig.test.", 16, Some((1232, true)), false)
}

/// The version marker of the RRSIG in `records` covering `covered`.
fn sig_marker(records: &[Record], covered: RecordType) -> u8 {
    records
        .iter()
        .find_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::RRSIG(s)) if s.input().type_covered == covered => {
                Some(s.sig()[0])
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no RRSIG over {covered} in {records:?}"))
}

#[test]
fn each_rrsig_comes_from_the_read_of_the_records_it_covers() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut flips_seen = 0;
    for flip_after in 0..8 {
        let backend = FlippingApex {
            zone: ZoneInfo {
                apex: Name::parse("sig.test.", None).unwrap(),
                ver: 1,
                gen: 1,
                serial: 1,
            },
            reads: AtomicUsize::new(0),
            flip_after,
        };
        let backend = Arc::new(backend);
        let responder = Responder::new(backend.clone(), PipelineConfig::default());
        let reply = runtime
            .block_on(responder.respond(&nodata_query(), Transport::Udp))
            .expect("a reply");
        let reads = backend.reads.load(Ordering::SeqCst);
        if flip_after > 0 && flip_after < reads {
            flips_seen += 1;
        }
        let m = Message::from_vec(&reply).unwrap();
        let authority = &m.authorities;
        let serial = authority
            .iter()
            .find_map(|r| match &r.data {
                RData::SOA(s) => Some(s.serial),
                _ => None,
            })
            .expect("the denial's SOA");
        assert_eq!(
            u32::from(sig_marker(authority, RecordType::SOA)),
            serial,
            "flip after {flip_after} of {reads} reads: the SOA's RRSIG is from another read"
        );
        let nsec = sig_marker(authority, RecordType::NSEC);
        assert!(nsec == 1 || nsec == 2, "{nsec}");
    }
    // The flip fell between reads of one answer at least once, or the
    // test proved nothing.
    assert!(flips_seen >= 2, "{flips_seen}");
}
