//! TSIG-signed queries (RFC 8945), well and badly signed.
//!
//! ```text
//!  input: mode byte, parameter byte, query bytes
//!  mode 0 sign now            ─► a reply with TSIG error 0 (signed)
//!       1 sign an hour ago    ─► NOTAUTH, BADTIME (18)
//!       2 MAC cut to p % 33   ─► < 16: FORMERR; 16..23: NOTAUTH, BADTRUNC (22)
//!                                (--tsig-min-mac-bytes 24); 24..32: signed
//!       3 an unknown key      ─► NOTAUTH, BADKEY (17)
//!       4 one MAC bit flipped ─► NOTAUTH, BADSIG (16)
//!       5 a byte of the signed message set to p (anything may happen)
//!       6+ the bytes as they are
//!  always: every reply parses, echoes the ID, keeps the UDP limit, and the
//!  cached responder says the same as the plain one; the verdicts above are
//!  checked when the query without its TSIG is a plain, well-formed query
//! ```

use super::{check_reply, hex, signature, MemBackend, Rig, FUZZ_ZONE, MAX_UDP};
use hickory_proto::op::{Message, ResponseCode};
use mongodns_server::handler::Transport;
use mongodns_server::pipeline::PipelineConfig;
use mongodns_server::tsig::{
    sign_request, sign_request_truncated, unix_now, verify_request, Scope, TsigKey, Verified,
};
use mongodns_server::wire::parse_query;
use std::time::Duration;

const KEY: &str = "hmac-sha256:fuzz-key:ZnV6ei1zZWNyZXQtZnV6ei1zZWNyZXQ=";
const OTHER_KEY: &str = "hmac-sha256:other-key:ZnV6ei1zZWNyZXQtZnV6ei1zZWNyZXQ=";
/// `--tsig-min-mac-bytes` of the rig.
const MIN_MAC: usize = 24;

fn key() -> TsigKey {
    KEY.parse().unwrap()
}

thread_local! {
    static TSIG_RIG: Rig = Rig::over(
        MemBackend::from_zone_text("fz.test.", FUZZ_ZONE),
        PipelineConfig {
            max_udp_size: MAX_UDP,
            query_timeout: Duration::from_secs(5),
            tsig_keys: vec![key()],
            tsig_min_mac: MIN_MAC,
            ..PipelineConfig::default()
        },
    );
}

/// What a reply must say about the TSIG of the request.
#[derive(Debug, PartialEq)]
enum Expect {
    /// Signed, TSIG error 0.
    Signed,
    /// NOTAUTH with this TSIG error.
    NotAuth(u16),
    /// FORMERR.
    FormErr,
    /// Nothing in particular.
    Anything,
}

/// Signs `query` as `mode` says; returns the message and what to expect.
fn signed(mode: u8, param: u8, query: &[u8]) -> (Vec<u8>, Expect) {
    let mut msg = query.to_vec();
    let now = unix_now();
    let expect = match mode {
        0 => {
            sign_request(&mut msg, &key(), now);
            Expect::Signed
        }
        1 => {
            sign_request(&mut msg, &key(), now - 3600);
            Expect::NotAuth(18)
        }
        2 => {
            let len = usize::from(param) % 33;
            sign_request_truncated(&mut msg, &key(), now, len);
            match len {
                0..16 => Expect::FormErr,
                16..MIN_MAC => Expect::NotAuth(22),
                _ => Expect::Signed,
            }
        }
        3 => {
            sign_request(&mut msg, &OTHER_KEY.parse().unwrap(), now);
            Expect::NotAuth(17)
        }
        4 => {
            sign_request(&mut msg, &key(), now);
            // The MAC ends 6 bytes before the end (original ID, error, other length).
            let at = msg.len() - 6 - 1 - usize::from(param) % 32;
            msg[at] ^= 1 << (param % 8);
            Expect::NotAuth(16)
        }
        5 => {
            sign_request(&mut msg, &key(), now);
            let at = usize::from(param) * 7 % msg.len();
            msg[at] = param;
            Expect::Anything
        }
        _ => Expect::Anything,
    };
    (msg, expect)
}

/// A plain query: it parses, carries no TSIG of its own, and hickory reads it.
fn plain_query(query: &[u8]) -> bool {
    parse_query(query).is_ok_and(|q| q.opcode == 0)
        && Message::from_vec(query).is_ok()
        && matches!(
            verify_request(query, &[key()], unix_now(), MIN_MAC, &Scope::NONE),
            Verified::Unsigned
        )
}

/// The TSIG error of a reply that ends with a TSIG record, if it does.
fn tsig_error(reply: &Message) -> Option<u16> {
    let tsig = reply.signature()?;
    Some(tsig.data.error.map_or(0, u16::from))
}

/// The TSIG target: see the module documentation.
pub fn tsig_query(data: &[u8]) -> u64 {
    let (Some(&mode), Some(&param)) = (data.first(), data.get(1)) else {
        return 0;
    };
    let query = &data[2..];
    if query.len() < 12 {
        return 0;
    }
    let (msg, expect) = signed(mode, param, query);
    let expect = match plain_query(query) {
        true => expect,
        false => Expect::Anything,
    };
    TSIG_RIG.with(|rig| {
        // Signed replies carry the time: the plain and cached responders'
        // bytes may differ by a second, so each is checked on its own.
        let mut sig = u64::from(mode.min(6));
        let mut checked = false;
        for transport in [Transport::Udp, Transport::Tcp] {
            let replies = [
                rig.answer(&msg, transport),
                rig.answer_through_caches(&msg, transport),
            ];
            for reply in replies.iter().flatten() {
                check_reply(&msg, reply, transport);
                check_verdict(&msg, reply, &expect);
                checked = true;
            }
            sig = sig
                .wrapping_mul(31)
                .wrapping_add(signature(rig.answer(&msg, transport).as_deref()));
        }
        for m in rig.answer_tcp(&msg) {
            check_reply(&msg, &m, Transport::Tcp);
        }
        if checked {
            super::judged::count(super::judged::Judged::Tsig);
        }
        sig
    })
}

fn check_verdict(msg: &[u8], reply: &[u8], expect: &Expect) {
    let parsed = Message::from_vec(reply).expect("checked by check_reply");
    if parsed.metadata.truncation {
        return; // a NOTAUTH too big for UDP goes without its TSIG, with TC
    }
    let rcode = parsed.metadata.response_code;
    let error = tsig_error(&parsed);
    let why = || format!("{expect:?}: query {} reply {}", hex(msg), hex(reply));
    match expect {
        // A signed query too big for a UDP reply: the reply is TC, still signed.
        Expect::Signed => assert_eq!(error, Some(0), "{}", why()),
        Expect::NotAuth(code) => {
            assert_eq!(rcode, ResponseCode::NotAuth, "{}", why());
            assert_eq!(error, Some(*code), "{}", why());
        }
        Expect::FormErr => assert_eq!(rcode, ResponseCode::FormErr, "{}", why()),
        Expect::Anything => {}
    }
}
