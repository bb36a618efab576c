//! The query file as ready-made wire messages.
//!
//! ```text
//!  `name [TYPE]` per line ─► build_query (ID 0, RD clear, OPT when asked)
//!  ─► Queries { messages, question_end: the part a reply must echo }
//! ```

use dns::{Name, RType};
use std::path::Path;

/// The query file, as ready-made messages (ID 0).
pub struct Queries {
    pub(super) messages: Vec<Box<[u8]>>,
    /// Length of header + question (the part a reply must echo).
    pub(super) question_end: Vec<u16>,
}

/// How queries are built.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryOptions {
    /// Add an OPT record.
    pub edns: bool,
    /// Set the DO bit (implies EDNS).
    pub dnssec_ok: bool,
    /// EDNS UDP payload size advertised.
    pub edns_size: u16,
}

/// One query message for `name` / `rtype`.
pub fn build_query(name: &Name, rtype: RType, options: QueryOptions) -> (Vec<u8>, usize) {
    let edns = options.edns || options.dnssec_ok;
    let mut m = Vec::with_capacity(12 + name.wire_len() + 4 + 11);
    m.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    m.extend_from_slice(name.as_wire());
    m.extend_from_slice(&rtype.0.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    let question_end = m.len();
    if edns {
        let size = if options.edns_size == 0 {
            4096
        } else {
            options.edns_size
        };
        m.push(0);
        m.extend_from_slice(&41u16.to_be_bytes());
        m.extend_from_slice(&size.to_be_bytes());
        let flags: u16 = if options.dnssec_ok { 0x8000 } else { 0 };
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&[0, 0]);
    }
    (m, question_end)
}

impl Queries {
    /// Reads a dnsperf file: `name [TYPE]` per line (A when no type);
    /// blank lines and lines starting with `;` or `#` are skipped.
    pub fn load(path: &Path, options: QueryOptions) -> Result<Queries, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text, options).map_err(|e| format!("{}:{e}", path.display()))
    }

    /// Parses the text of a query file.
    pub fn parse(text: &str, options: QueryOptions) -> Result<Queries, String> {
        let mut messages = Vec::new();
        let mut question_end = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with([';', '#']) {
                continue;
            }
            let mut words = line.split_whitespace();
            let name_text = words.next().unwrap_or_default();
            let name: Name = Name::parse(name_text, Some(&Name::root()))
                .map_err(|e| format!("{}: bad name {name_text:?}: {e}", n + 1))?;
            let rtype = match words.next() {
                None => RType::A,
                Some(t) => RType::from_mnemonic(&t.to_ascii_uppercase())
                    .ok_or_else(|| format!("{}: unknown type {t:?}", n + 1))?,
            };
            let (m, q) = build_query(&name, rtype, options);
            messages.push(m.into_boxed_slice());
            question_end.push(q as u16);
        }
        if messages.is_empty() {
            return Err("0: no queries in the file".into());
        }
        Ok(Queries {
            messages,
            question_end,
        })
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there are none (never, after `load`).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_messages_are_well_formed() {
        let q = Queries::parse(
            "# comment\nwww.Example.com A\n\nexample.com. MX\nfoo.example\n",
            QueryOptions {
                dnssec_ok: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(q.len(), 3);
        let m = &q.messages[0];
        assert_eq!(&m[4..12], &[0, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&m[12..29], b"\x03www\x07example\x03com\x00");
        assert_eq!(&m[29..33], &[0, 1, 0, 1]);
        assert_eq!(q.question_end[0], 33);
        // OPT: root, type 41, size 4096, DO.
        assert_eq!(&m[33..], &[0, 0, 41, 16, 0, 0, 0, 0x80, 0, 0, 0]);
        assert_eq!(
            &q.messages[1][q.question_end[1] as usize - 4..][..2],
            &[0, 15]
        );
        assert!(Queries::parse("a.example BOGUS\n", QueryOptions::default()).is_err());
    }
}
