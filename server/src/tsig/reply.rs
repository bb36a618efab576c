//! Checking the TSIG of a reply to a request we signed (a NOTIFY's reply).
//!
//! ```text
//!  reply_is_signed(reply, key, request MAC, now):
//!     one TSIG, the last record ─► same key name and algorithm, error 0
//!     ─► |now − time| ≤ min(fudge, MAX_FUDGE) ─► MAC over (request MAC
//!        length + MAC, the reply without TSIG and with its original ID,
//!        every variable) equals the one sent (truncated no shorter than
//!        the algorithm's floor) ─► true
//! ```

use super::{find_tsig, message_mac, Found, TsigKey, MAX_FUDGE};
use subtle::ConstantTimeEq;

/// True when `reply` carries a valid TSIG by `key` answering the request
/// whose MAC was `request_mac` (RFC 8945 §5.3, from the requester's side).
pub fn reply_is_signed(reply: &[u8], key: &TsigKey, request_mac: &[u8], now: u64) -> bool {
    let Found::Last(t) = find_tsig(reply) else {
        return false;
    };
    if t.key_name != key.name || t.algorithm != key.algorithm.name() || t.error != 0 {
        return false;
    }
    if now.abs_diff(t.time) > u64::from(t.fudge.min(MAX_FUDGE)) {
        return false;
    }
    if t.mac.len() < key.algorithm.min_mac_len() || t.mac.len() > key.algorithm.mac_len() {
        return false;
    }
    let mac = message_mac(key, Some(request_mac), reply, &t);
    bool::from(mac.as_ref()[..t.mac.len()].ct_eq(&t.mac))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tsig::{sign_request, unix_now, verify_request, Scope, Verified};

    #[test]
    fn a_reply_signed_for_our_request_passes_and_nothing_else() {
        let key: TsigKey = "hmac-sha256:k:c2VjcmV0c2VjcmV0c2VjcmV0".parse().unwrap();
        let other: TsigKey = "hmac-sha256:k:b3RoZXJvdGhlcm90aGVy".parse().unwrap();
        let now = unix_now();
        let mut request = vec![0x12, 0x34, 0x24, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1];
        let mac = sign_request(&mut request, &key, now);
        let Verified::Signed(mut signer) =
            verify_request(&request, std::slice::from_ref(&key), now, 16, &Scope::NONE)
        else {
            panic!("our own request does not verify");
        };
        let mut reply = vec![0x12, 0x34, 0xA4, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1];
        let unsigned = reply.clone();
        signer.sign(&mut reply);
        assert!(reply_is_signed(&reply, &key, &mac, now));
        assert!(!reply_is_signed(&unsigned, &key, &mac, now));
        assert!(!reply_is_signed(&reply, &other, &mac, now));
        assert!(!reply_is_signed(&reply, &key, &[0; 32], now));
        assert!(!reply_is_signed(&reply, &key, &mac, now + 1000));
        let mut flipped = reply.clone();
        flipped[3] ^= 1;
        assert!(!reply_is_signed(&flipped, &key, &mac, now));
    }
}
