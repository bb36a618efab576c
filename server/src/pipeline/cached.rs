//! The packet cache around the pipeline: looked up before it, filled after.
//!
//! ```text
//!  lookup_cached: key (None: uncacheable, counted) ─► fresh hit ─► reply
//!                 ─► database failing and a stale reply ─► it + EDE 3
//!                 ─► miss: the key, for remember
//!  remember:      reply kept for its smallest TTL while the zones it came
//!                 from keep their generation (not kept: a zone purged
//!                 meanwhile, or one answered at a generation already past);
//!                 a plain positive answer also while its name is untouched
//!  remember_refused: REFUSED kept while the set of zones stays the same
//! ```

use super::answer::Outcome;
use super::{answer, Responder, Transport};
use crate::backend::Backend;
use crate::cache::{Dependency, NameReach, PacketKey};
use dns::ZoneInfo;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What the packet cache had for a query.
// The key is kept unboxed, as before this value existed: it lives on the
// stack for the one call, and a miss must not cost an allocation.
#[allow(clippy::large_enum_variant)]
pub(super) enum Cached {
    /// A reply to send as it is.
    Hit(Vec<u8>),
    /// Nothing: run the pipeline, and keep its reply under this key (if any).
    Miss(Option<PacketKey>),
}

impl<B: Backend> Responder<B> {
    /// Looks `packet` up in the packet cache, a stale reply included while
    /// the database is failing.
    pub(super) fn lookup_cached(&self, packet: &[u8], transport: Transport) -> Cached {
        let Some(cache) = &self.cache else {
            return Cached::Miss(None);
        };
        let Some(key) = cache.packets.key(packet, transport == Transport::Tcp) else {
            let uncacheable = &cache.packets.stats.uncacheable;
            uncacheable.fetch_add(1, Ordering::Relaxed);
            return Cached::Miss(None);
        };
        let mut out = Vec::new();
        if cache.packets.lookup(packet, &key, &mut out) {
            return Cached::Hit(out);
        }
        if self.recheck.failing() && cache.packets.lookup_stale(packet, &key, &mut out) {
            self.mark_stale(&mut out, packet, transport);
            return Cached::Hit(out);
        }
        Cached::Miss(Some(key))
    }

    /// Stores a rendered reply in the packet cache, valid while the zones it
    /// came from keep their generation, for at most its smallest TTL.
    pub(super) fn remember(
        &self,
        key: Option<PacketKey>,
        reply: &[u8],
        answer: &answer::Answer,
        first_zone: &ZoneInfo,
    ) {
        let (Some(cache), Some(key)) = (&self.cache, key) else {
            return;
        };
        let ttl = answer
            .answer
            .iter()
            .chain(answer.authority.iter())
            .chain(answer.additional.iter())
            .map(|p| p.rrset.ttl)
            .min()
            .map_or(cache.empty_ttl, |t| Duration::from_secs(u64::from(t)));
        let mut deps = Vec::with_capacity(2);
        let mut token = None;
        for zone in [first_zone, &answer.zone] {
            let Some(state) = cache.registry.state(&zone.apex) else {
                return; // not tracked (purged meanwhile): do not cache
            };
            // Answered from an older generation (a resident copy catching
            // up, or a change meanwhile): never a hit.
            let Some(t) = state.name_token(zone.gen) else {
                return;
            };
            token = Some(t);
            deps.push(Dependency::Zone(state, zone.gen));
            if first_zone.apex == answer.zone.apex {
                break;
            }
        }
        let reach = match (token, is_plain_positive(answer, &key, first_zone)) {
            (Some(token), true) => Some(NameReach::new(
                token,
                cache.registry.zones_epoch(),
                answer.zone.gen,
            )),
            _ => None,
        };
        cache.packets.insert(&key, reply, ttl, deps, reach);
    }

    /// Stores a REFUSED reply (no zone of ours), valid while the set of
    /// served zones stays the same.
    pub(super) fn remember_refused(&self, key: Option<PacketKey>, reply: &[u8]) {
        if let (Some(cache), Some(key)) = (&self.cache, key) {
            let deps = vec![Dependency::ZoneSet(cache.registry.zones_epoch())];
            cache
                .packets
                .insert(&key, reply, cache.empty_ttl, deps, None);
        }
    }
}

/// True for an answer that depends on its question's node alone (and the
/// names above it): the records of the question name itself, from one zone,
/// with no alias, wildcard, referral, authority or additional records, and
/// of no type that could carry additional records (NS, MX, SRV: a target
/// added later would belong in the reply). Such
/// a reply outlives changes of its zone that do not touch its name
/// (`zones/name_scope.rs`).
fn is_plain_positive(answer: &answer::Answer, key: &PacketKey, first_zone: &ZoneInfo) -> bool {
    let qname = &key.as_bytes()[7..];
    let found = &answer.found;
    answer.outcome == Outcome::Hit
        && first_zone.apex == answer.zone.apex
        && answer.authority.is_empty()
        && answer.additional.is_empty()
        && found.wildcard.is_none()
        && found.closest_encloser.is_none()
        && found.cut.is_none()
        && found
            .sources
            .iter()
            .all(|s| s.node.is_some() && s.closest_encloser.is_none())
        && answer.answer.iter().all(|p| {
            p.owner.as_wire() == qname
                && p.rrset.rtype.info().is_none_or(|t| t.additional.is_none())
        })
}
