//! TSIG (RFC 8945) with HMAC-SHA256/384/512, for zone transfers and
//! ordinary queries. Keys and their scopes: `tsig/key.rs`.
//!
//! ```text
//!  request: no TSIG record anywhere ──► Unsigned (access list decides)
//!    a TSIG that is not the last additional record, or one of several,
//!      or with malformed rdata ──► FORMERR (§5.1)
//!    key name + algorithm known, for this zone (and address)? ── no ──►
//!      NOTAUTH, TSIG error BADKEY
//!    MAC size > the hash or < max(10, hash/2) ──► FORMERR (§5.2.2.1)
//!    MAC over (message without TSIG, original ID, ARCOUNT−1) + variables,
//!      truncated to the MAC size received ── wrong ──► NOTAUTH, BADSIG
//!    |now − time signed| > min(fudge, MAX_FUDGE = 300 s) ──► NOTAUTH,
//!      BADTIME (signed): a captured request cannot be replayed for hours
//!    MAC size < local minimum (--tsig-min-mac-bytes) ──► NOTAUTH, BADTRUNC
//!      (signed, §5.2.4)
//!    ok ──► Signed(signer): the transfer is allowed whatever the access list
//!  reply messages: first  MAC(request MAC, message, all variables)
//!                  next   MAC(previous MAC, message, timers) (§5.3.1)
//!  replies to requests we signed (NOTIFY out): tsig/reply.rs
//!  ordinary queries: answered as [`without_tsig`] (the packet cache only
//!    ever sees unsigned messages), then the reply is signed; one that would
//!    not fit with its TSIG becomes question + TC + TSIG (§5.3)
//! ```
//!
//! Secrets never reach a log: [`TsigKey`]'s `Debug` prints the name only.

mod key;
mod reply;

pub use key::{read_key_file, Algorithm, Scope, TsigKey};
pub use reply::reply_is_signed;

use crate::wire::read_name;
use crate::wire::walk::{self, u16_at, Part, RecordAt};
use dns::Name;
use ring::hmac;
use subtle::ConstantTimeEq;

/// TSIG record type.
pub const TYPE_TSIG: u16 = 250;
const CLASS_ANY: u16 = 255;
/// Fudge we sign with (seconds).
const FUDGE: u16 = 300;
/// Largest fudge a request is judged with (seconds): a larger one is
/// taken as this, so a captured request is not good for hours.
pub const MAX_FUDGE: u16 = 300;
/// TSIG error: bad signature.
pub const BADSIG: u16 = 16;
/// TSIG error: unknown key or algorithm.
pub const BADKEY: u16 = 17;
/// TSIG error: time outside the fudge.
pub const BADTIME: u16 = 18;
/// TSIG error: a MAC truncated below the local minimum.
pub const BADTRUNC: u16 = 22;
/// HMAC-SHA256 output length (bytes); `--tsig-min-mac-bytes` is at most this.
pub const MAC_LEN: usize = 32;
/// The shortest truncated MAC RFC 8945 §5.2.2.1 allows for HMAC-SHA256:
/// the larger of 10 bytes and half the hash.
pub const MIN_MAC_LEN: usize = if MAC_LEN / 2 > 10 { MAC_LEN / 2 } else { 10 };

/// Seconds since the Unix epoch, as TSIG counts time.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A TSIG record found at the end of a message.
struct TsigRecord {
    /// Offset where the record starts.
    start: usize,
    key_name: Name,
    algorithm: Name,
    time: u64,
    fudge: u16,
    mac: Vec<u8>,
    original_id: u16,
    error: u16,
    other: Vec<u8>,
}

/// Where a message's TSIG record is.
enum Found {
    /// No TSIG record (or a message too broken to tell: the query parser
    /// answers those).
    None,
    /// A TSIG record that is not the last of the additional section, one of
    /// several, or with rdata that does not parse: FORMERR (§5.1).
    Misplaced,
    /// One TSIG record, the last of the additional section.
    Last(TsigRecord),
}

/// Walks every record of `p` and finds its TSIG record.
fn find_tsig(p: &[u8]) -> Found {
    let Some(records) = whole_records(p) else {
        return Found::None;
    };
    let tsigs = records.iter().filter(|r| r.rtype == TYPE_TSIG).count();
    let Some(last) = records.last() else {
        return Found::None;
    };
    if tsigs == 0 {
        return Found::None;
    }
    if tsigs > 1
        || last.rtype != TYPE_TSIG
        || last.part != Part::Additional
        || last.rdata.end != p.len()
    {
        return Found::Misplaced;
    }
    let Some((key_name, _)) = read_name(p, last.start) else {
        return Found::None;
    };
    match parse_tsig_rdata(p, last.start, key_name, last.rdata.start, last.rdata.end) {
        Some(record) => Found::Last(record),
        None => Found::Misplaced,
    }
}

/// Every record of `p`, when all of them can be walked.
fn whole_records(p: &[u8]) -> Option<Vec<RecordAt>> {
    walk::records(p).ok()?.collect::<Result<_, _>>().ok()
}

fn parse_tsig_rdata(
    p: &[u8],
    start: usize,
    key_name: Name,
    rdata: usize,
    end: usize,
) -> Option<TsigRecord> {
    let (algorithm, at) = read_name(p, rdata)?;
    let time_bytes = p.get(at..at + 6)?;
    let time = time_bytes
        .iter()
        .fold(0u64, |acc, b| acc << 8 | u64::from(*b));
    let fudge = u16_at(p, at + 6)?;
    let mac_len = usize::from(u16_at(p, at + 8)?);
    let mac = p.get(at + 10..at + 10 + mac_len)?.to_vec();
    let at = at + 10 + mac_len;
    let original_id = u16_at(p, at)?;
    let error = u16_at(p, at + 2)?;
    let other_len = usize::from(u16_at(p, at + 4)?);
    let other = p.get(at + 6..at + 6 + other_len)?.to_vec();
    if at + 6 + other_len != end {
        return None;
    }
    Some(TsigRecord {
        start,
        key_name,
        algorithm,
        time,
        fudge,
        mac,
        original_id,
        error,
        other,
    })
}

/// The query without its TSIG record (ARCOUNT one less, header ID kept):
/// what an ordinary signed query is answered as. `None` when the message
/// does not end with a TSIG record.
pub fn without_tsig(p: &[u8]) -> Option<Vec<u8>> {
    let Found::Last(t) = find_tsig(p) else {
        return None;
    };
    let mut m = p[..t.start].to_vec();
    let ar = u16::from_be_bytes([m[10], m[11]]) - 1;
    m[10..12].copy_from_slice(&ar.to_be_bytes());
    Some(m)
}

/// The message as it was before the TSIG record was added: TSIG cut off,
/// ARCOUNT one less, the original ID in place.
fn unsigned_message(p: &[u8], tsig: &TsigRecord) -> Vec<u8> {
    let mut m = p[..tsig.start].to_vec();
    m[0..2].copy_from_slice(&tsig.original_id.to_be_bytes());
    let ar = u16::from_be_bytes([m[10], m[11]]) - 1;
    m[10..12].copy_from_slice(&ar.to_be_bytes());
    m
}

fn push_u48(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_be_bytes()[2..]);
}

/// The TSIG variables of RFC 8945 §4.3.3.
#[allow(clippy::too_many_arguments)]
fn push_variables(
    ctx: &mut hmac::Context,
    key_name: &Name,
    algorithm: &Name,
    time: u64,
    fudge: u16,
    error: u16,
    other: &[u8],
) {
    let mut v = Vec::with_capacity(64);
    v.extend_from_slice(key_name.as_wire());
    v.extend_from_slice(&CLASS_ANY.to_be_bytes());
    v.extend_from_slice(&0u32.to_be_bytes());
    v.extend_from_slice(algorithm.as_wire());
    push_u48(&mut v, time);
    v.extend_from_slice(&fudge.to_be_bytes());
    v.extend_from_slice(&error.to_be_bytes());
    v.extend_from_slice(&(other.len() as u16).to_be_bytes());
    v.extend_from_slice(other);
    ctx.update(&v);
}

/// The MAC of message `p`, whose TSIG record is `t`, by `key`: over
/// `prior` (the request MAC a reply's first MAC covers, RFC 8945 §4.3.1),
/// the message as it was before the TSIG was added, and every variable.
fn message_mac(key: &TsigKey, prior: Option<&[u8]>, p: &[u8], t: &TsigRecord) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(&key.key);
    if let Some(prior) = prior {
        ctx.update(&(prior.len() as u16).to_be_bytes());
        ctx.update(prior);
    }
    ctx.update(&unsigned_message(p, t));
    push_variables(
        &mut ctx,
        &t.key_name,
        &t.algorithm,
        t.time,
        t.fudge,
        t.error,
        &t.other,
    );
    ctx.sign()
}

/// What a request's TSIG says.
pub enum Verified {
    /// No TSIG: the access list decides.
    Unsigned,
    /// A valid TSIG: sign every reply message with this.
    Signed(TsigSigner),
    /// A TSIG that fails: reply NOTAUTH and append this with
    /// [`TsigFailure::append_to`].
    Failed(TsigFailure),
    /// A TSIG record out of place or with a MAC size RFC 8945 forbids:
    /// reply FORMERR, unsigned.
    Malformed,
}

/// Signs the messages of one reply stream.
pub struct TsigSigner {
    key: TsigKey,
    algorithm: Name,
    /// The previous MAC (the request's for the first message).
    prior: Vec<u8>,
    first: bool,
    now: u64,
}

/// A TSIG error to report.
pub struct TsigFailure {
    /// The TSIG error code (BADKEY, BADSIG, BADTIME, BADTRUNC).
    pub error: u16,
    key_name: Name,
    algorithm: Name,
    /// Our time, put in the unsigned error's TSIG record.
    now: u64,
    /// For BADTIME and BADTRUNC: a signer (the reply is signed, §5.3.2).
    signer: Option<TsigSigner>,
}

/// True if `packet` carries a TSIG record anywhere.
pub fn has_tsig(packet: &[u8]) -> bool {
    !matches!(find_tsig(packet), Found::None)
}

/// Checks the TSIG of `packet` against the `keys` usable for `scope`, at
/// Unix time `now`; `min_mac` is the shortest truncated MAC accepted
/// (local policy, from [`MIN_MAC_LEN`] to [`MAC_LEN`]; never below the
/// algorithm's floor).
pub fn verify_request(
    packet: &[u8],
    keys: &[TsigKey],
    now: u64,
    min_mac: usize,
    scope: &Scope,
) -> Verified {
    let t = match find_tsig(packet) {
        Found::None => return Verified::Unsigned,
        Found::Misplaced => return Verified::Malformed,
        Found::Last(t) => t,
    };
    let fail = |error, signer| {
        Verified::Failed(TsigFailure {
            error,
            key_name: t.key_name.clone(),
            algorithm: t.algorithm.clone(),
            now,
            signer,
        })
    };
    let known = |k: &&TsigKey| k.name == t.key_name && k.algorithm.name() == t.algorithm;
    let Some(key) = keys.iter().filter(known).find(|k| k.allows(scope)) else {
        return fail(BADKEY, None);
    };
    // §5.2.2.1: longer than the hash, or shorter than the larger of 10
    // bytes and half the hash, is a malformed message.
    let alg = key.algorithm;
    if t.mac.len() > alg.mac_len() || t.mac.len() < alg.min_mac_len() {
        return Verified::Malformed;
    }
    let expected = message_mac(key, None, packet, &t);
    // Constant-time comparison of the first MAC-size bytes (a truncated
    // MAC is the leading bytes of the full one, §5.2.2.1 rule 4).
    if !bool::from(expected.as_ref()[..t.mac.len()].ct_eq(&t.mac)) {
        return fail(BADSIG, None);
    }
    // The reply's MAC covers the request MAC as received (truncated).
    let signer = TsigSigner {
        key: key.clone(),
        algorithm: t.algorithm.clone(),
        prior: t.mac.clone(),
        first: true,
        now,
    };
    if now.abs_diff(t.time) > u64::from(t.fudge.min(MAX_FUDGE)) {
        return fail(BADTIME, Some(signer));
    }
    // §5.2.4: a valid MAC shorter than local policy allows.
    if t.mac.len() < min_mac.max(alg.min_mac_len()) {
        return fail(BADTRUNC, Some(signer));
    }
    Verified::Signed(signer)
}

/// Appends a TSIG record to `msg` and bumps ARCOUNT.
#[allow(clippy::too_many_arguments)]
fn append_record(
    msg: &mut Vec<u8>,
    key_name: &Name,
    algorithm: &Name,
    (time, fudge): (u64, u16),
    mac: &[u8],
    error: u16,
    other: &[u8],
) {
    let original_id = u16::from_be_bytes([msg[0], msg[1]]);
    let mut rdata = Vec::with_capacity(64 + mac.len());
    rdata.extend_from_slice(algorithm.as_wire());
    push_u48(&mut rdata, time);
    rdata.extend_from_slice(&fudge.to_be_bytes());
    rdata.extend_from_slice(&(mac.len() as u16).to_be_bytes());
    rdata.extend_from_slice(mac);
    rdata.extend_from_slice(&original_id.to_be_bytes());
    rdata.extend_from_slice(&error.to_be_bytes());
    rdata.extend_from_slice(&(other.len() as u16).to_be_bytes());
    rdata.extend_from_slice(other);
    msg.extend_from_slice(key_name.as_wire());
    msg.extend_from_slice(&TYPE_TSIG.to_be_bytes());
    msg.extend_from_slice(&CLASS_ANY.to_be_bytes());
    msg.extend_from_slice(&0u32.to_be_bytes());
    msg.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    msg.extend_from_slice(&rdata);
    let ar = u16::from_be_bytes([msg[10], msg[11]]).wrapping_add(1);
    msg[10..12].copy_from_slice(&ar.to_be_bytes());
}

impl TsigSigner {
    /// The request's MAC (before the first reply is signed with it).
    pub fn request_mac(&self) -> &[u8] {
        &self.prior
    }

    /// The key the request was signed with (what it may do: its scope and
    /// whether it may update).
    pub fn key(&self) -> &TsigKey {
        &self.key
    }

    /// Signs `msg` (a complete message without TSIG) and appends the record.
    pub fn sign(&mut self, msg: &mut Vec<u8>) {
        self.sign_with(msg, 0, &[]);
    }

    /// Bytes the TSIG record adds to a message.
    pub fn record_len(&self) -> usize {
        // owner, type/class/TTL/rdlength, algorithm, time, fudge, MAC
        // length + MAC, original ID, error, other length.
        let mac = self.key.algorithm.mac_len();
        self.key.name.wire_len() + 10 + self.algorithm.wire_len() + 6 + 2 + 2 + mac + 6
    }

    fn sign_with(&mut self, msg: &mut Vec<u8>, error: u16, other: &[u8]) {
        let mut ctx = hmac::Context::with_key(&self.key.key);
        ctx.update(&(self.prior.len() as u16).to_be_bytes());
        ctx.update(&self.prior);
        ctx.update(msg);
        if self.first {
            push_variables(
                &mut ctx,
                &self.key.name,
                &self.algorithm,
                self.now,
                FUDGE,
                error,
                other,
            );
        } else {
            let mut timers = Vec::with_capacity(8);
            push_u48(&mut timers, self.now);
            timers.extend_from_slice(&FUDGE.to_be_bytes());
            ctx.update(&timers);
        }
        let mac = ctx.sign().as_ref().to_vec();
        let (name, alg) = (self.key.name.clone(), self.algorithm.clone());
        append_record(msg, &name, &alg, (self.now, FUDGE), &mac, error, other);
        self.prior = mac;
        self.first = false;
    }
}

impl TsigFailure {
    /// Appends the TSIG record reporting the error to `reply` (a NOTAUTH
    /// reply without TSIG): unsigned, except BADTIME (which carries our
    /// time) and BADTRUNC, which are signed.
    pub fn append_to(mut self, reply: &mut Vec<u8>) {
        match self.signer.take() {
            Some(mut signer) => {
                let mut other = Vec::with_capacity(6);
                if self.error == BADTIME {
                    push_u48(&mut other, signer.now);
                }
                signer.sign_with(reply, self.error, &other);
            }
            None => append_record(
                reply,
                &self.key_name,
                &self.algorithm,
                (self.now, FUDGE),
                &[],
                self.error,
                &[],
            ),
        }
    }
}

/// Signs a request (for tests and tools): appends a TSIG record to `msg`
/// and returns its MAC.
pub fn sign_request(msg: &mut Vec<u8>, key: &TsigKey, now: u64) -> Vec<u8> {
    sign_request_truncated(msg, key, now, key.algorithm.mac_len())
}

/// Signs a request with its MAC cut to the first `len` bytes (RFC 8945
/// §5.2.2.1), as a client that truncates does; returns the MAC sent.
pub fn sign_request_truncated(msg: &mut Vec<u8>, key: &TsigKey, now: u64, len: usize) -> Vec<u8> {
    sign_request_with(msg, key, (now, FUDGE), len)
}

/// Signs a request claiming `fudge` seconds of leeway (for tests: a
/// server judges it with at most [`MAX_FUDGE`]); returns the MAC.
pub fn sign_request_with_fudge(msg: &mut Vec<u8>, key: &TsigKey, now: u64, fudge: u16) -> Vec<u8> {
    sign_request_with(msg, key, (now, fudge), key.algorithm.mac_len())
}

fn sign_request_with(
    msg: &mut Vec<u8>,
    key: &TsigKey,
    (now, fudge): (u64, u16),
    len: usize,
) -> Vec<u8> {
    let alg = key.algorithm.name();
    let mut ctx = hmac::Context::with_key(&key.key);
    ctx.update(msg);
    push_variables(&mut ctx, &key.name, &alg, now, fudge, 0, &[]);
    let mut mac = ctx.sign().as_ref().to_vec();
    mac.truncate(len);
    append_record(msg, &key.name, &alg, (now, fudge), &mac, 0, &[]);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TsigKey {
        "hmac-sha256:xfr-key:c2VjcmV0LXNlY3JldC1zZWNyZXQ="
            .parse()
            .unwrap()
    }

    fn last(p: &[u8]) -> TsigRecord {
        match find_tsig(p) {
            Found::Last(t) => t,
            _ => panic!("no TSIG at the end"),
        }
    }

    fn axfr() -> Vec<u8> {
        let mut p = vec![0xAB, 0xCD, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(b"\x07example\x03com\x00\x00\xfc\x00\x01");
        p
    }

    #[test]
    fn base64_and_key_syntax() {
        assert!("hmac-md5:k:aGVsbG8=".parse::<TsigKey>().is_err());
        assert!("k:!!".parse::<TsigKey>().is_err());
        let k = key();
        assert_eq!(k.name.to_string(), "xfr-key.");
        let shown = format!("{k:?}");
        assert!(
            !shown.contains("c2Vj"),
            "Debug must hide the secret: {shown}"
        );
    }

    #[test]
    fn a_signed_request_verifies_and_a_tampered_one_does_not() {
        let now = 1_700_000_000;
        let mut p = axfr();
        sign_request(&mut p, &key(), now);
        assert!(matches!(
            verify_request(&p, &[key()], now + 10, MIN_MAC_LEN, &Scope::NONE),
            Verified::Signed(_)
        ));
        assert!(matches!(
            verify_request(&axfr(), &[key()], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Unsigned
        ));
        // One byte of the question changed.
        let mut bad = p.clone();
        bad[13] ^= 0x20;
        assert!(matches!(
            verify_request(&bad, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Failed(TsigFailure { error: BADSIG, .. })
        ));
        // Another key of the same name.
        let other: TsigKey = "xfr-key:b3RoZXI=".parse().unwrap();
        assert!(matches!(
            verify_request(&p, &[other], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Failed(TsigFailure { error: BADSIG, .. })
        ));
        // Unknown key.
        assert!(matches!(
            verify_request(&p, &[], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Failed(TsigFailure { error: BADKEY, .. })
        ));
        // Too late.
        assert!(matches!(
            verify_request(&p, &[key()], now + 301, MIN_MAC_LEN, &Scope::NONE),
            Verified::Failed(TsigFailure { error: BADTIME, .. })
        ));
    }

    #[test]
    fn the_fudge_is_capped_and_sha384_and_sha512_verify() {
        let now = 1_700_000_000;
        let mut p = axfr();
        sign_request_with_fudge(&mut p, &key(), now, 36_000);
        let verdict = verify_request(&p, &[key()], now + 1000, MIN_MAC_LEN, &Scope::NONE);
        assert!(
            matches!(verdict, Verified::Failed(ref f) if f.error == BADTIME),
            "a fudge of 10 h is judged as 300 s"
        );
        let ok = verify_request(&p, &[key()], now + 299, MIN_MAC_LEN, &Scope::NONE);
        assert!(matches!(ok, Verified::Signed(_)));
        for alg in ["hmac-sha384", "hmac-sha512"] {
            let k: TsigKey = format!("{alg}:k2:c2VjcmV0LXNlY3JldC1zZWNyZXQ=")
                .parse()
                .unwrap();
            let mut p = axfr();
            let mac = sign_request(&mut p, &k, now);
            assert_eq!(mac.len(), k.algorithm.mac_len());
            let Verified::Signed(mut signer) =
                verify_request(&p, std::slice::from_ref(&k), now, MIN_MAC_LEN, &Scope::NONE)
            else {
                panic!("{alg} request not verified");
            };
            let mut reply = axfr();
            signer.sign(&mut reply);
            assert_eq!(
                reply.len() - axfr().len(),
                signer.record_len(),
                "{alg} record length"
            );
            // The same name with another algorithm is another key: BADKEY.
            let other: TsigKey = "hmac-sha256:k2:c2VjcmV0LXNlY3JldC1zZWNyZXQ="
                .parse()
                .unwrap();
            let verdict = verify_request(&p, &[other], now, MIN_MAC_LEN, &Scope::NONE);
            assert!(matches!(verdict, Verified::Failed(ref f) if f.error == BADKEY));
        }
    }

    #[test]
    fn signed_replies_chain_macs() {
        let now = 1_700_000_000;
        let mut p = axfr();
        let request_mac = sign_request(&mut p, &key(), now);
        let Verified::Signed(mut signer) =
            verify_request(&p, &[key()], now, MIN_MAC_LEN, &Scope::NONE)
        else {
            panic!("not verified");
        };
        let mut reply = axfr();
        reply[2] = 0x84;
        let plain = reply.clone();
        signer.sign(&mut reply);
        // Check the first reply's MAC the way a client does.
        let t = last(&reply);
        assert_eq!(u16::from_be_bytes([reply[10], reply[11]]), 1);
        let mut ctx = hmac::Context::with_key(&key().key);
        ctx.update(&(request_mac.len() as u16).to_be_bytes());
        ctx.update(&request_mac);
        ctx.update(&plain);
        push_variables(&mut ctx, &t.key_name, &t.algorithm, t.time, t.fudge, 0, &[]);
        assert_eq!(ctx.sign().as_ref(), &t.mac[..]);
        // The second uses the first's MAC and the timers only.
        let mut second = plain.clone();
        signer.sign(&mut second);
        let t2 = last(&second);
        let mut ctx = hmac::Context::with_key(&key().key);
        ctx.update(&(t.mac.len() as u16).to_be_bytes());
        ctx.update(&t.mac);
        ctx.update(&plain);
        let mut timers = Vec::new();
        push_u48(&mut timers, t2.time);
        timers.extend_from_slice(&t2.fudge.to_be_bytes());
        ctx.update(&timers);
        assert_eq!(ctx.sign().as_ref(), &t2.mac[..]);
    }

    fn truncated(mut p: Vec<u8>, len: usize, now: u64) -> Vec<u8> {
        sign_request_truncated(&mut p, &key(), now, len);
        p
    }

    #[test]
    fn truncated_macs_follow_rfc_8945() {
        let now = 1_700_000_000;
        assert_eq!(MIN_MAC_LEN, 16);
        // 16..=31 bytes: accepted by the default policy, signed reply.
        for len in [16, 20, 31] {
            let p = truncated(axfr(), len, now);
            assert_eq!(last(&p).mac.len(), len);
            assert!(
                matches!(
                    verify_request(&p, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
                    Verified::Signed(_)
                ),
                "{len}"
            );
            // A stricter local policy: BADTRUNC, signed.
            assert!(matches!(
                verify_request(&p, &[key()], now, MAC_LEN, &Scope::NONE),
                Verified::Failed(TsigFailure {
                    error: BADTRUNC,
                    signer: Some(_),
                    ..
                })
            ));
            // A wrong truncated MAC is still BADSIG.
            let mut bad = p.clone();
            bad[13] ^= 0x20;
            assert!(matches!(
                verify_request(&bad, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
                Verified::Failed(TsigFailure { error: BADSIG, .. })
            ));
        }
        // Under max(10, 16) bytes, or empty: FORMERR.
        for len in [0, 1, 10, 15] {
            let p = truncated(axfr(), len, now);
            assert!(
                matches!(
                    verify_request(&p, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
                    Verified::Malformed
                ),
                "{len}"
            );
        }
    }

    #[test]
    fn a_tsig_that_is_not_last_is_malformed() {
        let now = 1_700_000_000;
        let mut p = axfr();
        sign_request(&mut p, &key(), now);
        // An OPT record after the TSIG.
        let mut after = p.clone();
        after.extend_from_slice(&[0, 0, 41, 4, 0xD0, 0, 0, 0, 0, 0, 0]);
        after[11] += 1;
        assert!(matches!(
            verify_request(&after, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Malformed
        ));
        assert!(without_tsig(&after).is_none());
        // The same record in the answer section (ANCOUNT 1, ARCOUNT 0).
        let mut answer = p.clone();
        answer[6..12].copy_from_slice(&[0, 1, 0, 0, 0, 0]);
        assert!(matches!(
            verify_request(&answer, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Malformed
        ));
        // Two TSIG records.
        let mut twice = p.clone();
        let record = p[last(&p).start..].to_vec();
        twice.extend_from_slice(&record);
        twice[11] += 1;
        assert!(matches!(
            verify_request(&twice, &[key()], now, MIN_MAC_LEN, &Scope::NONE),
            Verified::Malformed
        ));
    }
}
