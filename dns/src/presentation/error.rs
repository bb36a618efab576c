//! The two errors of presentation text: [`ParseError`] for a zone file (it
//! names the file and line) and [`SyntaxError`] for one piece of text (a
//! record line, an rdata string) that has no file.
//!
//! ```text
//!  lexer / rdata / record functions ─► String message naming the field at fault
//!        ├─ ZoneFileReader ─► ParseError { file, line, message }
//!        └─ parse_rdata / parse_record ─► SyntaxError { message }
//! ```

use std::fmt;
use std::path::PathBuf;

/// A syntax or I/O error, with the file and line where its entry began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file the entry is in.
    pub file: PathBuf,
    /// 1-based line on which the entry starts (0 when the file could not be opened).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// What is wrong with one record or rdata given as text; the message names
/// the field at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// What is wrong.
    pub message: String,
}

impl From<String> for SyntaxError {
    fn from(message: String) -> SyntaxError {
        SyntaxError { message }
    }
}

impl From<&str> for SyntaxError {
    fn from(message: &str) -> SyntaxError {
        SyntaxError {
            message: message.to_string(),
        }
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SyntaxError {}
