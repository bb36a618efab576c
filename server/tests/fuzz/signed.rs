//! The query path over signed zones (DO=1 answers, NSEC, NSEC3).
//!
//! ```text
//!  once per run: FUZZ_ZONE imported as fz.test. and fz3.test. into the real
//!    database, secured by mongodns-sign's library (NSEC; NSEC3 with a salt
//!    and 1 iteration), read back into a MemBackend (nodes + denial keys)
//!  signed_query(bytes) ─► check_query_path (plain = cached, UDP/TCP, AXFR)
//!    ─► and, for DO=1 questions in those zones (over TCP, so never TC):
//!       an authoritative answer with records carries an RRSIG;
//!       NXDOMAIN carries NSEC or NSEC3 records, and RRSIGs, in authority
//! ```

use super::{big_rrset, check_query_path, MemBackend, Rig, FUZZ_ZONE, MAX_UDP};
use backend_mongo::dnssec_store::Nsec3Config;
use backend_mongo::testing::database_uri;
use backend_mongo::Store;
use dns::Name;
use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::{Record, RecordType};
use mongodns_server::handler::Transport;
use mongodns_server::pipeline::PipelineConfig;
use mongodns_server::wire::parse_query;
use std::sync::OnceLock;
use std::time::Duration;

/// The signed zones: NSEC, then NSEC3.
pub const SIGNED_ZONES: [&str; 2] = ["fz.test.", "fz3.test."];

fn secure_options(nsec3: Option<Nsec3Config>) -> signer::SecureOptions {
    signer::SecureOptions {
        algorithm: 13,
        csk: false,
        nsec3,
        cds: false,
        validity: signer::Validity::default(),
        threads: 1,
        grace: Duration::ZERO,
    }
}

/// Imports and secures one zone, and adds what the database then holds.
async fn sign_into(store: &Store, apex: &str, nsec3: Option<Nsec3Config>, out: &mut MemBackend) {
    let text = format!("{FUZZ_ZONE}{}", big_rrset()).replace("fz.test.", apex);
    let path = std::env::temp_dir().join(format!("fuzz-signed-{}-{apex}zone", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let zone: Name = apex.parse().unwrap();
    let options = loadtools::import::ImportOptions {
        zone: zone.clone(),
        replace: false,
        batch_size: 100,
        in_flight: 2,
        grace: Duration::ZERO,
    };
    let progress = loadtools::import::NoProgress;
    loadtools::import::import_file(store, &path, &options, &progress)
        .await
        .expect("import of the fuzz zone");
    let _ = std::fs::remove_file(&path);
    signer::secure_zone(store, &zone, &secure_options(nsec3), &signer::NoProgress)
        .await
        .expect("secure-zone of the fuzz zone");
    let info = store.find_zone(&zone).await.unwrap().unwrap();
    let nodes = store.zone_nodes(&info).await.unwrap();
    let denials: Vec<(String, Name)> = store
        .read_version(&zone, info.ver)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|n| Some((n.dk?, n.name)))
        .collect();
    assert!(!denials.is_empty(), "{apex} has a denial chain");
    out.add_zone(info, nodes, &denials);
}

/// Signs the zones in a database of its own, once per process.
fn signed_backend() -> MemBackend {
    static SIGNED: OnceLock<MemBackend> = OnceLock::new();
    SIGNED
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let name = format!("mdt_fuzz_signed_{}", std::process::id());
                let store = Store::connect(&database_uri(), &name, Duration::from_secs(10))
                    .await
                    .expect("test database unreachable");
                store.ensure_indexes().await.unwrap();
                let mut backend = MemBackend::default();
                let nsec3 = Nsec3Config {
                    iterations: 1,
                    salt: vec![0xab, 0xcd],
                    opt_out: false,
                };
                sign_into(&store, SIGNED_ZONES[0], None, &mut backend).await;
                sign_into(&store, SIGNED_ZONES[1], Some(nsec3), &mut backend).await;
                let _ = store.database().drop().await;
                store.shutdown().await;
                backend
            })
        })
        .clone()
}

thread_local! {
    static SIGNED_RIG: Rig = Rig::over(signed_backend(), PipelineConfig {
        max_udp_size: MAX_UDP,
        query_timeout: Duration::from_secs(5),
        ..PipelineConfig::default()
    });
}

/// The query path over the signed zones, with the DNSSEC properties.
pub fn signed_query(data: &[u8]) -> u64 {
    SIGNED_RIG.with(|rig| {
        let sig = check_query_path(rig, data);
        if let Some(reply) = rig.answer(data, Transport::Tcp) {
            check_dnssec(data, &reply);
        }
        sig
    })
}

fn has(records: &[Record], rtype: RecordType) -> bool {
    records.iter().any(|r| r.record_type() == rtype)
}

/// The DNSSEC properties of a TCP reply to a DO=1 question in a signed zone.
fn check_dnssec(query: &[u8], reply: &[u8]) {
    let Ok(q) = parse_query(query) else { return };
    let in_signed = SIGNED_ZONES
        .iter()
        .any(|z| q.qname.is_subdomain_of(&z.parse().unwrap()));
    if !in_signed || !q.edns.is_some_and(|e| e.dnssec_ok) {
        return;
    }
    let msg = Message::from_vec(reply).expect("checked by check_reply");
    let meta = &msg.metadata;
    if meta.truncation {
        return;
    }
    super::judged::count(super::judged::Judged::Dnssec);
    let hexq = super::hex(query);
    if meta.response_code == ResponseCode::NXDomain {
        let proof =
            has(&msg.authorities, RecordType::NSEC) || has(&msg.authorities, RecordType::NSEC3);
        assert!(proof, "DO=1 NXDOMAIN without NSEC/NSEC3: {hexq}");
        assert!(
            has(&msg.authorities, RecordType::RRSIG),
            "unsigned proof: {hexq}"
        );
    }
    if meta.response_code == ResponseCode::NoError && meta.authoritative && !msg.answers.is_empty()
    {
        assert!(
            has(&msg.answers, RecordType::RRSIG),
            "DO=1 answer without RRSIG: {hexq}"
        );
    }
}
