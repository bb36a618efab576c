//! A sharded LRU map bounded by entries and by bytes.
//!
//! ```text
//!  key ─hash─► shard i ─try_lock─► LruCache  (busy shard: a miss, never a wait)
//!  hit: read in place; move to the front only if the entry has sunk below
//!       the top eighth of its shard's list (lazy promotion)
//!  insert: evict least-recently-used until both bounds hold
//! ```
//!
//! Lazy promotion: moving an entry to the front of the list writes its two
//! neighbours, which for a large cache are two cache misses on every hit
//! (`perf` put them at a fifth of a cache hit's cost). Each entry remembers
//! the shard's "front pushes" count when it was last put at the front; a hit
//! promotes it only when more than len/8 entries have been pushed in front of
//! it since. Entries in the top eighth are therefore not reordered, and the
//! eviction order differs from exact LRU only within that eighth: what is
//! evicted is still an entry not used while at least 7/8 of the shard was
//! pushed past it.

use lru::LruCache;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Something that knows roughly how much memory it holds.
pub trait Weigh {
    /// Approximate bytes held, including the key's share.
    fn weight(&self) -> usize;
}

/// A value with the shard's push count when it was last put at the front.
struct Slot<V> {
    value: V,
    pushed_at: u64,
}

struct Shard<K, V> {
    map: LruCache<K, Slot<V>>,
    bytes: usize,
    /// Entries put at the front (inserts and promotions) since start.
    pushes: u64,
}

/// An LRU map split into independently locked shards.
pub struct ShardedLru<K, V> {
    shards: Box<[Mutex<Shard<K, V>>]>,
    hasher: foldhash::quality::RandomState,
    max_entries_per_shard: usize,
    max_bytes_per_shard: usize,
    evictions: AtomicU64,
    busy: AtomicU64,
}

impl<K: Hash + Eq + Clone, V: Weigh> ShardedLru<K, V> {
    /// A map of `shards` shards holding at most `max_entries` entries and
    /// `max_bytes` bytes in all.
    pub fn new(shards: usize, max_entries: usize, max_bytes: usize) -> Self {
        let shards = shards.max(1);
        ShardedLru {
            shards: (0..shards)
                .map(|_| {
                    Mutex::new(Shard {
                        map: LruCache::unbounded(),
                        bytes: 0,
                        pushes: 0,
                    })
                })
                .collect(),
            hasher: Default::default(),
            max_entries_per_shard: (max_entries / shards).max(1),
            max_bytes_per_shard: (max_bytes / shards).max(1),
            evictions: AtomicU64::new(0),
            busy: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: &K) -> &Mutex<Shard<K, V>> {
        let h = self.hasher.hash_one(key);
        &self.shards[(h as usize) % self.shards.len()]
    }

    /// Runs `f` on the entry for `key` if present and the shard is free.
    /// Returns `None` on a miss or a busy shard.
    pub fn with<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        let mut shard = match self.shard(key).try_lock() {
            Ok(s) => s,
            Err(_) => {
                self.busy.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        let shard = &mut *shard;
        let depth_limit = (shard.map.len() / 8) as u64;
        let slot = shard.map.peek_mut(key)?;
        let result = f(&slot.value);
        if shard.pushes - slot.pushed_at > depth_limit {
            slot.pushed_at = shard.pushes;
            shard.pushes += 1;
            shard.map.promote(key);
        }
        Some(result)
    }

    /// Inserts or replaces; a busy shard drops the insert.
    pub fn insert(&self, key: K, value: V) {
        let Ok(mut shard) = self.shard(&key).try_lock() else {
            self.busy.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let w = value.weight();
        let slot = Slot {
            value,
            pushed_at: shard.pushes,
        };
        shard.pushes += 1;
        if let Some(old) = shard.map.put(key, slot) {
            shard.bytes -= old.value.weight();
        }
        shard.bytes += w;
        while shard.map.len() > self.max_entries_per_shard || shard.bytes > self.max_bytes_per_shard
        {
            match shard.map.pop_lru() {
                Some((_, old)) => {
                    shard.bytes -= old.value.weight();
                    self.evictions.fetch_add(1, Ordering::Relaxed);
                }
                None => break,
            }
        }
    }

    /// Removes `key`.
    pub fn remove(&self, key: &K) {
        let mut shard = self.shard(key).lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = shard.map.pop(key) {
            shard.bytes -= old.value.weight();
        }
    }

    /// Removes every entry for which `drop` is true; returns how many.
    pub fn retain(&self, mut keep: impl FnMut(&K, &V) -> bool) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            let mut shard = shard.lock().unwrap_or_else(|p| p.into_inner());
            let doomed: Vec<K> = shard
                .map
                .iter()
                .filter(|(k, slot)| !keep(k, &slot.value))
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                if let Some(old) = shard.map.pop(&k) {
                    shard.bytes -= old.value.weight();
                    removed += 1;
                }
            }
        }
        removed
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).map.len())
            .sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held (approximate).
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).bytes)
            .sum()
    }

    /// Entries evicted to stay within bounds, since start.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Lookups or inserts skipped because a shard was busy, since start.
    pub fn busy(&self) -> u64 {
        self.busy.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(usize);
    impl Weigh for Bytes {
        fn weight(&self) -> usize {
            self.0
        }
    }

    #[test]
    fn bounded_by_entries_and_bytes() {
        let lru: ShardedLru<u32, Bytes> = ShardedLru::new(1, 3, 1000);
        for i in 0..5 {
            lru.insert(i, Bytes(10));
        }
        assert_eq!(lru.len(), 3);
        assert_eq!(lru.evictions(), 2);
        assert!(lru.with(&0, |_| ()).is_none());
        assert!(lru.with(&4, |_| ()).is_some());
        lru.insert(9, Bytes(990));
        assert!(lru.bytes() <= 1000);
        assert!(lru.with(&9, |_| ()).is_some());
    }

    #[test]
    fn recently_used_entries_survive() {
        let lru: ShardedLru<u32, Bytes> = ShardedLru::new(1, 2, 1000);
        lru.insert(1, Bytes(1));
        lru.insert(2, Bytes(1));
        assert!(lru.with(&1, |_| ()).is_some());
        lru.insert(3, Bytes(1));
        assert!(lru.with(&1, |_| ()).is_some());
        assert!(lru.with(&2, |_| ()).is_none());
        assert_eq!(lru.retain(|k, _| *k != 1), 1);
        assert_eq!(lru.len(), 1);
    }

    #[test]
    fn hits_near_the_front_do_not_reorder_but_deep_ones_are_promoted() {
        // One shard of 16: the top eighth is 2 entries deep.
        let lru: ShardedLru<u32, Bytes> = ShardedLru::new(1, 16, 1 << 20);
        for i in 0..16 {
            lru.insert(i, Bytes(1));
        }
        // 15 is at the front, 0 at the back: a hit on 0 promotes it, so
        // the next insert evicts 1 instead.
        assert!(lru.with(&0, |_| ()).is_some());
        lru.insert(16, Bytes(1));
        assert!(lru.with(&1, |_| ()).is_none(), "1 should have been evicted");
        assert!(
            lru.with(&0, |_| ()).is_some(),
            "0 was used and must survive"
        );
        // Entries pushed within the top eighth stay where they are: a hit
        // on 16 (just inserted) does not count as a push.
        let pushes = lru.shards[0].lock().unwrap().pushes;
        assert!(lru.with(&16, |_| ()).is_some());
        assert_eq!(lru.shards[0].lock().unwrap().pushes, pushes);
        // Every entry that is hit while deep survives a full turnover of
        // the rest, as under exact LRU.
        for round in 0..4u32 {
            for fresh in 0..8u32 {
                lru.insert(100 + round * 8 + fresh, Bytes(1));
                assert!(lru.with(&0, |_| ()).is_some(), "round {round}: 0 evicted");
            }
        }
    }
}
