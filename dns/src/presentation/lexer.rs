//! Lines → entries: comments, quotes, escapes and parentheses.
//!
//! ```text
//!  "www  IN A 192.0.2.1 ; web"      → Entry { line, blank_owner: false, [www, IN, A, 192.0.2.1] }
//!  "     IN TXT \"a b\" (\n  c )"   → Entry { line, blank_owner: true,  [IN, TXT, "a b"(quoted), c] }
//! ```
//!
//! Tokens keep their backslash escapes verbatim (`a\.b` stays four bytes):
//! only the consumer knows whether a token is a name, a character-string or
//! a number, so only it can decode them. Quotes are removed and recorded in
//! [`Token::is_quoted`]; a quoted section inside a bare token
//! (`alpn="h2,h3"`) is glued to it, as in RFC 9460 presentation format.

use std::io::{BufRead, Read};

/// Longest physical line, and longest logical entry (all of its tokens
/// together), that the lexer holds in memory. Larger input is an error, which
/// keeps memory bounded even for a file with an unclosed parenthesis.
pub const MAX_ENTRY_BYTES: usize = 1 << 20;

/// One field of presentation text.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Token {
    text: Vec<u8>,
    quoted: bool,
}

impl Token {
    /// A token that was written without quotes; `text` keeps its escapes.
    pub fn bare(text: impl Into<Vec<u8>>) -> Token {
        Token {
            text: text.into(),
            quoted: false,
        }
    }

    /// A token that was written in double quotes (quotes removed, escapes kept).
    pub fn quoted(text: impl Into<Vec<u8>>) -> Token {
        Token {
            text: text.into(),
            quoted: true,
        }
    }

    /// The raw text, backslash escapes not yet decoded.
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// True when the token started with a double quote.
    pub fn is_quoted(&self) -> bool {
        self.quoted
    }

    /// The text for error messages (lossy UTF-8, quotes restored).
    pub(crate) fn show(&self) -> String {
        let s = String::from_utf8_lossy(&self.text);
        if self.quoted {
            format!("\"{s}\"")
        } else {
            s.into_owned()
        }
    }

    /// True for a bare token equal to `word`, ignoring ASCII case.
    pub(crate) fn is_word(&self, word: &str) -> bool {
        !self.quoted && self.text.eq_ignore_ascii_case(word.as_bytes())
    }
}

/// Splits one piece of presentation text (such as the rdata of a record)
/// into tokens. Parentheses are allowed and simply ignored when balanced.
pub fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut state = LineState::default();
    state.scan(text.as_bytes());
    if let Some(err) = state.error {
        return Err(err);
    }
    if state.depth != 0 {
        return Err("unbalanced parentheses: '(' is never closed".into());
    }
    Ok(state.tokens)
}

/// One logical entry: a record or a directive, possibly spanning lines.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Line on which the entry starts (1-based).
    pub line: usize,
    /// The first line began with a space or tab: the owner is omitted.
    pub blank_owner: bool,
    /// The fields, comments and parentheses removed.
    pub tokens: Vec<Token>,
}

/// A lexing failure. `fatal` errors end the file (I/O error, end of file
/// inside parentheses); others only cost the entry they occur in.
#[derive(Debug)]
pub(crate) struct LexError {
    pub line: usize,
    pub message: String,
    pub fatal: bool,
}

/// Reads entries from a [`BufRead`], one line at a time.
pub(crate) struct Lexer {
    reader: Box<dyn BufRead + Send>,
    line_no: usize,
    buf: Vec<u8>,
    eof: bool,
}

impl Lexer {
    pub(crate) fn new(reader: Box<dyn BufRead + Send>) -> Lexer {
        Lexer {
            reader,
            line_no: 0,
            buf: Vec::with_capacity(256),
            eof: false,
        }
    }

    /// The next entry, `Ok(None)` at end of input.
    pub(crate) fn next_entry(&mut self) -> Result<Option<Entry>, LexError> {
        let mut state = LineState::default();
        let mut start_line = 0;
        let mut blank_owner = false;
        loop {
            let too_long = match self.read_line() {
                Ok(Some(too_long)) => too_long,
                Ok(None) => {
                    if state.depth > 0 {
                        return Err(LexError {
                            line: start_line,
                            message: "unbalanced parentheses: end of file inside '(' opened here"
                                .into(),
                            fatal: true,
                        });
                    }
                    return Ok(None);
                }
                Err(e) => {
                    return Err(LexError {
                        line: self.line_no.max(1),
                        message: format!("read error: {e}"),
                        fatal: true,
                    })
                }
            };
            let fresh = state.depth == 0 && state.tokens.is_empty() && state.error.is_none();
            if fresh {
                start_line = self.line_no;
                blank_owner = matches!(self.buf.first(), Some(b' ' | b'\t'));
            }
            if too_long {
                state.fail(format!("line longer than {MAX_ENTRY_BYTES} bytes"));
            } else {
                state.scan(&self.buf);
            }
            if state.bytes > MAX_ENTRY_BYTES {
                // Give up on the entry; an unclosed '(' would otherwise
                // swallow the rest of the file.
                return Err(LexError {
                    line: start_line,
                    message: format!(
                        "entry longer than {MAX_ENTRY_BYTES} bytes (unbalanced parentheses?)"
                    ),
                    fatal: true,
                });
            }
            if state.depth > 0 {
                continue;
            }
            if let Some(message) = state.error.take() {
                return Err(LexError {
                    line: start_line,
                    message,
                    fatal: false,
                });
            }
            if !state.tokens.is_empty() {
                return Ok(Some(Entry {
                    line: start_line,
                    blank_owner,
                    tokens: std::mem::take(&mut state.tokens),
                }));
            }
        }
    }

    /// Reads the next physical line into `buf` without its line ending.
    /// `Ok(Some(true))` when the line exceeded the limit (it is skipped).
    fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        self.buf.clear();
        if self.eof {
            return Ok(None);
        }
        let limit = (MAX_ENTRY_BYTES + 1) as u64;
        let reader: &mut (dyn BufRead + Send) = &mut *self.reader;
        let n = Read::take(reader, limit).read_until(b'\n', &mut self.buf)?;
        if n == 0 {
            self.eof = true;
            return Ok(None);
        }
        self.line_no += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_ENTRY_BYTES {
            // Skip the rest of the overlong line.
            loop {
                let chunk = self.reader.fill_buf()?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.reader.consume(i + 1);
                        break;
                    }
                    None => {
                        let len = chunk.len();
                        self.reader.consume(len);
                    }
                }
            }
            self.buf.clear();
            return Ok(Some(true));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(false))
    }
}

/// Tokenizer state carried from one line to the next within an entry.
#[derive(Default)]
struct LineState {
    tokens: Vec<Token>,
    depth: usize,
    bytes: usize,
    error: Option<String>,
}

impl LineState {
    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }

    /// Splits one physical line, appending to `tokens`.
    fn scan(&mut self, line: &[u8]) {
        let mut i = 0;
        // The bare token being built, if any.
        let mut current: Option<Vec<u8>> = None;
        while i < line.len() {
            let c = line[i];
            match c {
                b' ' | b'\t' | b'\r' => {
                    self.flush(&mut current);
                    i += 1;
                }
                b';' => {
                    self.flush(&mut current);
                    break;
                }
                b'(' => {
                    self.flush(&mut current);
                    if self.depth > 0 {
                        self.fail("nested parentheses".into());
                    }
                    self.depth += 1;
                    i += 1;
                }
                b')' => {
                    self.flush(&mut current);
                    if self.depth == 0 {
                        self.fail("unbalanced parentheses: ')' without '('".into());
                    } else {
                        self.depth -= 1;
                    }
                    i += 1;
                }
                b'"' => {
                    // A quote opens a quoted token, or a quoted section of
                    // the bare token under construction.
                    let (text, next, closed) = scan_quoted(line, i + 1);
                    if !closed {
                        self.fail("unterminated quoted string".into());
                    }
                    match current.as_mut() {
                        Some(bare) => bare.extend_from_slice(text),
                        None => {
                            self.bytes += text.len();
                            self.tokens.push(Token::quoted(text));
                        }
                    }
                    i = next;
                }
                b'\\' => {
                    let bare = current.get_or_insert_with(Vec::new);
                    if i + 1 >= line.len() {
                        self.fail("backslash at end of line".into());
                        bare.push(c);
                        i += 1;
                    } else {
                        bare.extend_from_slice(&line[i..i + 2]);
                        i += 2;
                    }
                }
                _ => {
                    current.get_or_insert_with(Vec::new).push(c);
                    i += 1;
                }
            }
        }
        self.flush(&mut current);
    }

    fn flush(&mut self, current: &mut Option<Vec<u8>>) {
        if let Some(text) = current.take() {
            self.bytes += text.len();
            self.tokens.push(Token::bare(text));
        }
    }
}

/// Scans a quoted section starting just after the opening quote. Returns the
/// raw contents, the index after the closing quote, and whether one was found.
fn scan_quoted(line: &[u8], start: usize) -> (&[u8], usize, bool) {
    let mut i = start;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return (&line[start..i], i + 1, true),
            _ => i += 1,
        }
    }
    (&line[start..line.len()], line.len(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex_all(text: &str) -> Vec<Result<Entry, LexError>> {
        let mut lexer = Lexer::new(Box::new(std::io::Cursor::new(text.as_bytes().to_vec())));
        let mut out = Vec::new();
        loop {
            match lexer.next_entry() {
                Ok(Some(e)) => out.push(Ok(e)),
                Ok(None) => break,
                Err(e) => {
                    let fatal = e.fatal;
                    out.push(Err(e));
                    if fatal {
                        break;
                    }
                }
            }
        }
        out
    }

    fn texts(e: &Entry) -> Vec<String> {
        e.tokens.iter().map(Token::show).collect()
    }

    #[test]
    fn splits_comments_quotes_and_parentheses() {
        let entries = lex_all(
            "; header\n\nwww IN A 192.0.2.1 ; c\n  TXT \"a ; b\" x\\ y (\n  c ; in parens\n )\n",
        );
        assert_eq!(entries.len(), 2);
        let a = entries[0].as_ref().unwrap();
        assert_eq!((a.line, a.blank_owner), (3, false));
        assert_eq!(texts(a), ["www", "IN", "A", "192.0.2.1"]);
        let b = entries[1].as_ref().unwrap();
        assert_eq!((b.line, b.blank_owner), (4, true));
        assert_eq!(texts(b), ["TXT", "\"a ; b\"", "x\\ y", "c"]);
    }

    #[test]
    fn glues_quoted_sections_to_bare_tokens() {
        let toks = tokenize(r#"alpn="h2,h3 x" "" "a\"b""#).unwrap();
        assert_eq!(toks[0], Token::bare("alpn=h2,h3 x"));
        assert_eq!(toks[1], Token::quoted(""));
        assert_eq!(toks[2], Token::quoted(r#"a\"b"#));
    }

    #[test]
    fn reports_errors_at_the_entry_start() {
        let entries = lex_all("a A 1\nb TXT \"open\nc A 2\nd SOA ( x\n y\n");
        assert!(entries[0].is_ok());
        let e = entries[1].as_ref().unwrap_err();
        assert_eq!((e.line, e.fatal), (2, false));
        assert!(e.message.contains("unterminated quoted string"));
        assert!(entries[2].is_ok());
        let e = entries[3].as_ref().unwrap_err();
        assert_eq!((e.line, e.fatal), (4, true));
        assert!(e.message.contains("unbalanced parentheses"));
    }

    #[test]
    fn handles_crlf_and_missing_final_newline() {
        let entries = lex_all("a A 1\r\nb A 2");
        assert_eq!(entries.len(), 2);
        assert_eq!(texts(entries[1].as_ref().unwrap()), ["b", "A", "2"]);
    }
}
