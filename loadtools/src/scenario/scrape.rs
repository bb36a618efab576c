//! What the children print, read back from their log files.
//!
//! ```text
//!  import-*.log ─► last line "imported …" ─► parse_import_line ─► (records, s, records/s)
//!  sign.log     ─► last line "secured …"  ─► number_before(.., "s") ─► seconds
//!  any log      ─► tail(n) for an error message
//! ```

use std::path::Path;

/// One `mongodns-import` run: its summary line, parsed.
#[derive(Clone, Debug, Default)]
pub struct ImportRun {
    /// What was imported.
    pub what: String,
    /// Records, from the summary line.
    pub records: u64,
    /// Seconds, from the summary line.
    pub seconds: f64,
    /// Records per second, from the summary line.
    pub rate: f64,
    /// The summary line, or why there is none.
    pub line: String,
    /// It exited 0 within the time allowed.
    pub finished: bool,
}

/// The number just before the word `unit` in `line` (`… 31.20 s, …`).
pub(super) fn number_before(line: &str, unit: &str) -> Option<f64> {
    let words: Vec<&str> = line
        .split_whitespace()
        .map(|w| w.trim_matches([',', ';', '(', ')', ':']))
        .collect();
    words
        .windows(2)
        .find(|w| w[1] == unit && w[0].parse::<f64>().is_ok())
        .and_then(|w| w[0].parse().ok())
}

/// Parses the numbers of `mongodns-import`'s summary line
/// (`imported N records …, S s, R records/s`): records, seconds, rate.
pub fn parse_import_line(line: &str) -> Option<(u64, f64, f64)> {
    Some((
        number_before(line, "records")? as u64,
        number_before(line, "s")?,
        number_before(line, "records/s")?,
    ))
}

/// The last line of the file at `path` that starts with `prefix`.
pub(super) fn last_line_starting(path: &Path, prefix: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .rfind(|l| l.starts_with(prefix))
        .unwrap_or_default()
        .to_string()
}

/// The last `lines` lines of the file at `path` (for error messages).
pub(super) fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines_parse() {
        let line = "imported 160000 records into example.com. (serial 5, version 1; 0 stored by an earlier run): 160000 inserted, 0 merged, 31.20 s, 5128 records/s";
        assert_eq!(parse_import_line(line), Some((160000, 31.2, 5128.0)));
        let multi = "imported 70000 records in 10000 zones (0 already stored by an earlier run): 70000 inserted, 0 merged, 12.00 s, 5833 records/s";
        assert_eq!(parse_import_line(multi), Some((70000, 12.0, 5833.0)));
        assert_eq!(parse_import_line("error"), None);
    }
}
