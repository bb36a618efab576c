//! Fuzzing on the stable toolchain: corpus replay (always) and a bounded,
//! coverage-free mutation run (docs/reliability.md, "Fuzzing").
//!
//! ```text
//!  tests/fuzz/{query,zonefile,packet_key}/*   replayed: every file must pass
//!  then, per target, FUZZ_SECS seconds (default 2) of mutations of the corpus;
//!  an input whose reply signature is new joins the in-memory corpus
//!  (and is written to FUZZ_SAVE/<target>/ when that is set);
//!  a failing input is written to target/fuzz-failures/ and fails the test
//! ```
//!
//! Longer runs: `FUZZ_SECS=300 FUZZ_SAVE=$PWD/tests/fuzz cargo test --release
//! -p mongodns-server --test fuzzing -- --nocapture`.

mod fuzz;

use fuzz::*;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

fn read_input(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "hex") {
        unhex(&String::from_utf8_lossy(&bytes))
    } else {
        bytes
    }
}

type Check = fn(&[u8]) -> u64;

fn replay(target: &str, check: Check) -> Vec<Vec<u8>> {
    let files = corpus_files(&root(), target);
    assert!(!files.is_empty(), "the {target} corpus is empty");
    let mut inputs = Vec::new();
    for file in files {
        let input = read_input(&file);
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            panic!("{target}: corpus file {} fails", file.display());
        }
        inputs.push(input);
    }
    inputs
}

fn fuzz_for(target: &str, check: Check, mut corpus: Vec<Vec<u8>>, max_len: usize) {
    let secs: f64 = std::env::var("FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let save = std::env::var_os("FUZZ_SAVE").map(|d| PathBuf::from(d).join(target));
    let mut rng = Rng(seed);
    let mut seen: HashSet<u64> = HashSet::new();
    for input in &corpus {
        seen.insert(check(input));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    let mut runs = 0u64;
    let mut added = 0;
    while Instant::now() < deadline {
        for _ in 0..64 {
            let base = &corpus[rng.below(corpus.len())];
            let other = &corpus[rng.below(corpus.len())];
            let input = mutate(&mut rng, base, other, max_len);
            runs += 1;
            match catch_unwind(AssertUnwindSafe(|| check(&input))) {
                Ok(sig) => {
                    if seen.insert(sig) && corpus.len() < 4096 {
                        // At most 200 new files a run: the corpus stays small.
                        if let Some(dir) = save.as_ref().filter(|_| added < 200) {
                            std::fs::create_dir_all(dir).unwrap();
                            let name = format!("{:016x}.hex", sig);
                            std::fs::write(dir.join(name), hex(&input) + "\n").unwrap();
                        }
                        corpus.push(input);
                        added += 1;
                    }
                }
                Err(_) => {
                    let dir = root().join("target/fuzz-failures").join(target);
                    std::fs::create_dir_all(&dir).unwrap();
                    let file = dir.join(format!("{seed}-{runs}.hex"));
                    std::fs::write(&file, hex(&input) + "\n").unwrap();
                    panic!(
                        "{target}: input {} fails (seed {seed}, run {runs}); saved to {}",
                        hex(&input),
                        file.display()
                    );
                }
            }
        }
    }
    eprintln!(
        "fuzz {target}: {runs} runs in {:.1} s ({:.0}/s), seed {seed}, {added} new signatures, corpus {}",
        started.elapsed().as_secs_f64(),
        runs as f64 / started.elapsed().as_secs_f64(),
        corpus.len()
    );
}

#[test]
fn query_path_corpus_and_mutations() {
    let corpus = replay("query", query_path);
    // The hand-made hostile packets are query-path inputs too.
    let mut all = corpus;
    for file in corpus_files(&root(), "hostile") {
        let input = read_input(&file);
        if catch_unwind(AssertUnwindSafe(|| query_path(&input))).is_err() {
            panic!("hostile packet {} fails the query path", file.display());
        }
        all.push(input);
    }
    fuzz_for("query", query_path, all, 1400);
}

#[test]
fn zonefile_corpus_and_mutations() {
    let corpus = replay("zonefile", zonefile);
    fuzz_for("zonefile", zonefile, corpus, 4096);
}

#[test]
fn packet_key_corpus_and_mutations() {
    let corpus = replay("packet_key", packet_key);
    fuzz_for("packet_key", packet_key, corpus, 600);
}

/// The check itself can fail: a reply that does not parse is caught.
#[test]
fn the_reply_check_rejects_garbage() {
    let query = [0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1];
    let garbage = [0x12, 0x34, 0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0];
    let bad =
        catch_unwind(|| check_reply(&query, &garbage, mongodns_server::pipeline::Transport::Udp));
    assert!(bad.is_err());
    let wrong_id = catch_unwind(|| {
        let mut reply = query.to_vec();
        reply[0] = 0;
        reply[2] |= 0x80;
        check_reply(&query, &reply, mongodns_server::pipeline::Transport::Udp)
    });
    assert!(wrong_id.is_err());
}
