//! `dns::encoding` on the `data-encoding` crate beside the hand-written
//! codecs it replaced (`old.rs`): first a check that both give the same
//! answer for every short text over a mixed alphabet and for random bytes,
//! then ns per call on the inputs the hot paths see (an NSEC3 hash, an
//! ECDSA signature, a salt).
//!
//! ```text
//!  cargo run --release -p mongodns-dns --example encodings -- old|new
//!  every text ≤ 5 chars of "aAvV0/+=* \nwg" and 2,000 random byte strings
//!    ─► old and new agree (else exit 1)
//!  per function: ROUNDS calls, best of 5 ─► ns per call (run old and new
//!    alternately, several times, and compare the medians)
//! ```

mod old;

use dns::encoding::{self as new, EncodingError};
use std::hint::black_box;
use std::time::Instant;

type Decoded = Result<Vec<u8>, EncodingError>;

/// One implementation's functions, called the same way for both.
struct Codec {
    base64: fn(&[u8]) -> String,
    from_base64: fn(&str) -> Option<Vec<u8>>,
    strict_base64: fn(&[u8]) -> Decoded,
    to_hex: fn(&[u8]) -> String,
    from_hex: fn(&str) -> Option<Vec<u8>>,
    hex: fn(&[u8]) -> Decoded,
    base32hex: fn(&[u8]) -> String,
    from_base32hex: fn(&str) -> Option<Vec<u8>>,
    strict_base32hex: fn(&[u8]) -> Decoded,
}

/// The codec of module `$m`, its streaming decoders driven as the
/// zone-file reader drives them (`dns::presentation::text`).
macro_rules! codec {
    ($m:ident) => {
        Codec {
            base64: $m::base64,
            from_base64: $m::from_base64,
            strict_base64: |t| {
                feed($m::Base64Decoder::new(), $m::Base64Decoder::push, t)?.finish_strict()
            },
            to_hex: $m::to_hex,
            from_hex: $m::from_hex,
            hex: |t| feed($m::HexDecoder::new(), $m::HexDecoder::push, t)?.finish(),
            base32hex: $m::base32hex,
            from_base32hex: $m::from_base32hex,
            strict_base32hex: |t| {
                feed($m::Base32hexDecoder::new(), $m::Base32hexDecoder::push, t)?.finish_strict()
            },
        }
    };
}

/// Pushes every character of `text` into decoder `d`.
fn feed<D>(
    mut d: D,
    push: fn(&mut D, u8) -> Result<(), EncodingError>,
    text: &[u8],
) -> Result<D, EncodingError> {
    for &c in text {
        push(&mut d, c)?;
    }
    Ok(d)
}

const ROUNDS: usize = 2_000_000;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let (old, new) = (codec!(old), codec!(new));
    let differences = agree(&old, &new);
    if differences > 0 {
        eprintln!("old and new differ on {differences} inputs");
        std::process::exit(1);
    }
    println!("old and new agree");
    match which.as_str() {
        "old" => time("old", &old),
        "new" => time("new", &new),
        _ => {
            eprintln!("usage: encodings old|new");
            std::process::exit(2);
        }
    }
}

/// How many inputs the two answer differently.
fn agree(a: &Codec, b: &Codec) -> usize {
    let mut bad = 0;
    let mut check = |what: &str, same: bool, input: &dyn std::fmt::Debug| {
        if !same {
            bad += 1;
            if bad <= 10 {
                eprintln!("{what} differs on {input:?}");
            }
        }
    };
    const ALPHABET: &[u8] = b"aAvV0/+=* \nwg";
    let mut text = Vec::new();
    for len in 0..=5u32 {
        for mut n in 0..ALPHABET.len().pow(len) {
            text.clear();
            for _ in 0..len {
                text.push(ALPHABET[n % ALPHABET.len()]);
                n /= ALPHABET.len();
            }
            let s = std::str::from_utf8(&text).expect("ASCII");
            check("from_base64", (a.from_base64)(s) == (b.from_base64)(s), &s);
            check(
                "strict base64",
                (a.strict_base64)(&text) == (b.strict_base64)(&text),
                &s,
            );
            check("from_hex", (a.from_hex)(s) == (b.from_hex)(s), &s);
            check("hex", (a.hex)(&text) == (b.hex)(&text), &s);
            check(
                "from_base32hex",
                (a.from_base32hex)(s) == (b.from_base32hex)(s),
                &s,
            );
            check(
                "strict base32hex",
                (a.strict_base32hex)(&text) == (b.strict_base32hex)(&text),
                &s,
            );
        }
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..2000 {
        let bytes = random_bytes(&mut seed, i % 70);
        let (b64, hex, b32) = (
            (a.base64)(&bytes),
            (a.to_hex)(&bytes),
            (a.base32hex)(&bytes),
        );
        check("base64", b64 == (b.base64)(&bytes), &bytes);
        check("to_hex", hex == (b.to_hex)(&bytes), &bytes);
        check("base32hex", b32 == (b.base32hex)(&bytes), &bytes);
        let back = Ok(bytes.clone());
        check(
            "base64 back",
            (b.strict_base64)(b64.as_bytes()) == back,
            &b64,
        );
        check("hex back", (b.hex)(hex.as_bytes()) == back, &hex);
        let upper = b32.to_uppercase();
        check(
            "base32hex back",
            (b.strict_base32hex)(upper.as_bytes()) == back,
            &b32,
        );
    }
    bad
}

fn random_bytes(seed: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 24) as u8
        })
        .collect()
}

/// Prints ns per call of each function on the hot paths' inputs.
fn time(label: &str, c: &Codec) {
    let mut seed = 7;
    let hash = random_bytes(&mut seed, 20); // an NSEC3 hash (SHA-1)
    let sig = random_bytes(&mut seed, 64); // an ECDSA P-256 signature
    let b32 = (c.base32hex)(&hash);
    let b64 = (c.base64)(&sig);
    let hex = (c.to_hex)(&hash);
    let rows: [(&str, &dyn Fn()); 7] = [
        ("base32hex, 20 bytes", &|| {
            drop(black_box((c.base32hex)(black_box(&hash))))
        }),
        ("from_base32hex, 32 chars", &|| {
            drop(black_box((c.from_base32hex)(black_box(&b32))))
        }),
        ("strict base32hex, 32 chars", &|| {
            drop(black_box((c.strict_base32hex)(black_box(b32.as_bytes()))))
        }),
        ("to_hex, 20 bytes", &|| {
            drop(black_box((c.to_hex)(black_box(&hash))))
        }),
        ("hex decoder, 40 chars", &|| {
            drop(black_box((c.hex)(black_box(hex.as_bytes()))))
        }),
        ("base64, 64 bytes", &|| {
            drop(black_box((c.base64)(black_box(&sig))))
        }),
        ("strict base64, 88 chars", &|| {
            drop(black_box((c.strict_base64)(black_box(b64.as_bytes()))))
        }),
    ];
    for (what, f) in rows {
        let best = (0..5)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..ROUNDS {
                    f();
                }
                start.elapsed().as_nanos() as f64 / ROUNDS as f64
            })
            .fold(f64::INFINITY, f64::min);
        println!("{label} {what:<28} {best:6.1} ns");
    }
}
