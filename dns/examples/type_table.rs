//! How long the reply path's questions to the record-type table take:
//! `RType::info()` and the compression and additional-address lookups,
//! beside the `match` on type numbers they replace. Prints ns per lookup.
//!
//! ```text
//!  cargo run --release -p mongodns-dns --example type_table
//!  a mix of types (A, AAAA, MX, NS, TXT, SOA, SRV, CNAME, an unknown one)
//!    ─► N rounds of each way ─► ns per lookup, best of 5
//! ```

use std::hint::black_box;
use std::time::Instant;

use dns::types::Rdata;
use dns::RType;

const MIX: [u16; 9] = [1, 28, 15, 2, 16, 6, 33, 5, 65280];
const ROUNDS: usize = 20_000_000;

/// The lookups as hard-coded matches (how the writer and the pipeline
/// asked before the table).
fn by_match(t: u16) -> (bool, Option<usize>) {
    let compress = matches!(t, 2 | 5 | 12 | 15 | 6);
    let target = match t {
        2 => Some(0),
        15 => Some(2),
        33 => Some(6),
        _ => None,
    };
    (compress, target)
}

/// The same answers from the descriptor table.
fn by_table(t: u16) -> (bool, Option<usize>) {
    match RType(t).info() {
        Some(info) => (
            info.compress && matches!(info.rdata, Rdata::Fields(_)),
            info.target_at(),
        ),
        None => (false, None),
    }
}

/// Best-of-5 ns per lookup of `f` over the mix.
fn time(f: fn(u16) -> (bool, Option<usize>)) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut n = 0usize;
        for i in 0..ROUNDS {
            let (c, t) = f(black_box(MIX[i % MIX.len()]));
            n += usize::from(c) + t.unwrap_or(0);
        }
        black_box(n);
        best = best.min(start.elapsed().as_nanos() as f64 / ROUNDS as f64);
    }
    best
}

fn main() {
    for t in MIX {
        assert_eq!(by_match(t), by_table(t), "type {t}");
    }
    println!("match on type numbers: {:.2} ns per lookup", time(by_match));
    println!("descriptor table:      {:.2} ns per lookup", time(by_table));
}
