//! A cursor over one record's rdata tokens, shared by the per-type
//! parsers (rdata.rs, loc.rs, svcb.rs).
//!
//! ```text
//!  [Token] ─► Fields::next / raw / peek / rest ─► numbers, names and
//!  strings by text.rs ─► end(): leftovers are "extra rdata field …"
//! ```

use super::lexer::Token;
use super::text::{parse_u16, parse_u32, parse_u8, push_char_string, push_name};
use crate::Name;

/// A cursor over the rdata tokens of one record.
pub(crate) struct Fields<'a> {
    toks: &'a [Token],
    pos: usize,
    pub origin: &'a Name,
}

impl<'a> Fields<'a> {
    pub(super) fn new(toks: &'a [Token], origin: &'a Name) -> Fields<'a> {
        Fields {
            toks,
            pos: 0,
            origin,
        }
    }

    /// The next token, or "missing <what>".
    pub(crate) fn next(&mut self, what: &str) -> Result<&'a Token, String> {
        let tok = self
            .toks
            .get(self.pos)
            .ok_or_else(|| format!("missing rdata field: {what}"))?;
        self.pos += 1;
        Ok(tok)
    }

    /// The raw text of the next token.
    pub(crate) fn raw(&mut self, what: &str) -> Result<&'a [u8], String> {
        self.next(what).map(Token::text)
    }

    /// The next token without consuming it.
    pub(crate) fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.pos)
    }

    /// All remaining tokens.
    pub(crate) fn rest(&mut self) -> &'a [Token] {
        let rest = &self.toks[self.pos..];
        self.pos = self.toks.len();
        rest
    }

    /// All remaining tokens, at least one.
    pub(super) fn rest_nonempty(&mut self, what: &str) -> Result<&'a [Token], String> {
        if self.pos >= self.toks.len() {
            return Err(format!("missing rdata field: {what}"));
        }
        Ok(self.rest())
    }

    /// Fails if tokens are left over.
    pub(crate) fn end(&self) -> Result<(), String> {
        match self.toks.get(self.pos) {
            None => Ok(()),
            Some(extra) => Err(format!("extra rdata field '{}'", extra.show())),
        }
    }

    pub(super) fn u8(&mut self, what: &str) -> Result<u8, String> {
        parse_u8(self.raw(what)?, what)
    }

    pub(super) fn u16(&mut self, what: &str) -> Result<u16, String> {
        parse_u16(self.raw(what)?, what)
    }

    pub(super) fn u32(&mut self, what: &str) -> Result<u32, String> {
        parse_u32(self.raw(what)?, what)
    }

    pub(super) fn name(&mut self, what: &str, out: &mut Vec<u8>) -> Result<(), String> {
        let raw = self.raw(what)?;
        push_name(raw, self.origin, out)
    }

    pub(super) fn char_string(&mut self, what: &str, out: &mut Vec<u8>) -> Result<(), String> {
        push_char_string(self.raw(what)?, out)
    }
}
