//! What the examples share: their command line (positional words, numbers
//! with defaults) and how they end on an error.
//!
//! ```text
//!  main ─► finish(program, run().await): an error printed, exit status 1
//!  run  ─► Words::read(usage, required) ─► word(i), number(i, default)
//! ```

use std::fmt::Display;
use std::str::FromStr;

/// The words after the program's name.
pub struct Words(Vec<String>);

impl Words {
    /// The command line; `usage` as the error when fewer than `required`
    /// words are given.
    pub fn read(usage: &str, required: usize) -> Result<Words, String> {
        let words: Vec<String> = std::env::args().skip(1).collect();
        match words.len() < required {
            true => Err(format!("usage: {usage}")),
            false => Ok(Words(words)),
        }
    }

    /// Word `i` (one of the required ones).
    pub fn word(&self, i: usize) -> &str {
        &self.0[i]
    }

    /// Word `i` as a number, `default` when it is not given.
    pub fn number<T: FromStr>(&self, i: usize, default: T) -> Result<T, String> {
        self.0.get(i).map_or(Ok(default), |s| {
            s.parse().map_err(|_| format!("not a number: {s}"))
        })
    }
}

/// Ends the example: its error printed after `program`, exit status 1.
pub fn finish<E: Display>(program: &str, result: Result<(), E>) {
    if let Err(e) = result {
        eprintln!("{program}: {e}");
        std::process::exit(1);
    }
}
