//! Seeded randomness for the randomized tests: a seed from the
//! environment (to replay a failure) or the clock, and a small generator.
//!
//! ```text
//!  seed("X_SEED") ─► $X_SEED, or the clock's nanoseconds (odd) ─► Rng
//!  Rng::next_u64 (xorshift 13/7/17) ─► below(n)
//! ```

/// The seed `var` names in the environment, else one from the clock.
/// Tests print it so that a failure can be replayed.
pub fn seed(var: &str) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(1, |d| d.as_nanos() as u64 | 1)
        })
}

/// A small xorshift generator, reproducible from its seed (never 0).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}
