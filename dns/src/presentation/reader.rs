//! Streaming RFC 1035 master-file ("zone file") reader.
//!
//! ```text
//!  BufRead ──lines──► Lexer ──Entry{line, blank_owner, tokens}──► ZoneFileReader
//!  (lexer.rs)          comments, quotes, ( ... ), escapes kept        │
//!                                                                     ├─ $ORIGIN / $TTL: update state
//!                                                                     ├─ $INCLUDE: include.rs checks the path
//!                                                                     │   (regular file, allowed directory), then
//!                                                                     │   push a Frame (own origin and owner;
//!                                                                     │   popped at its EOF)
//!                                                                     └─ record: owner, then record.rs head:
//!                                                                          [TTL|class]×2, type
//!                                                                          │
//!                                       rdata.rs / svcb.rs / loc.rs ◄──────┘ rdata_from_text
//!                                                                          │
//!                                               Iterator::next ◄── Result<Record, ParseError>
//! ```
//!
//! Memory is bounded: one entry is held at a time (at most
//! [`super::MAX_ENTRY_BYTES`]), plus the origin, last owner, `$TTL`, last TTL, the
//! SOA MINIMUM seen, and one open file per `$INCLUDE` level.
//!
//! # TTL of a record written without one
//!
//! 1. the `$TTL` in force (initially the `default_ttl` given to the reader);
//! 2. else the last TTL written explicitly on a record (RFC 1035 §5.1);
//! 3. else the MINIMUM field of the SOA read in this stream (of the record
//!    itself, for an SOA); a record before any SOA has none;
//! 4. else an error.
//!
//! An `$INCLUDE`d file starts with the includer's origin (or the one the
//! directive gives) and previous owner; changes it makes to either do not
//! leak back. `$TTL` and the last TTL, in contrast, simply run through
//! included files in reading order.
//!
//! TTLs are seconds or BIND units (`1h30m`, `2d`, `1w`) everywhere a TTL
//! is read; a record TTL above 2^31 - 1 is an error (RFC 2181 §8).
//!
//! # Errors
//!
//! Each error names the file and the line where the entry began. After an
//! error the iterator goes on with the next entry, so a caller can collect
//! every error of a file in one pass; an I/O error or the end of a file
//! inside parentheses ends that file (its includer, if any, continues).
//!
//! # Not supported
//!
//! `$GENERATE` (an "unsupported directive" error); classes other than IN;
//! presentation formats of rare types (SIG, KEY, CERT, IPSECKEY, HIP, ...)
//! for which the RFC 3597 `\#` form must be used. The origin appended to a
//! relative name in rdata is lower case (it is a [`Name`]).
//!
//! # Record types
//!
//! A, AAAA, NS, CNAME, SOA, MX, TXT, SPF, SRV, PTR, CAA, DNAME, NAPTR, SSHFP,
//! TLSA, SMIMEA, SVCB, HTTPS, DS, CDS, DNSKEY, CDNSKEY, LOC, HINFO, RP, NSEC,
//! NSEC3, NSEC3PARAM, RRSIG, URI, OPENPGPKEY, AFSDB, KX, DHCID, EUI48, EUI64,
//! CSYNC and ZONEMD; any type, including `TYPEnnn`, in the `\#` form.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Name, RType};

use super::error::ParseError;
use super::include;
use super::lexer::{Entry, Lexer};
use super::rdata::rdata_from_text;
use super::record::{head, soa_minimum, CLASS_IN};
use super::text::{parse_name, parse_ttl, unescape};

/// Deepest `$INCLUDE` nesting accepted (the top file is level 0).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// One resource record read from a zone file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Owner name (case-folded, absolute).
    pub owner: Name,
    /// TTL in seconds (explicit or defaulted; see the module documentation).
    pub ttl: u32,
    /// Class; always [`CLASS_IN`].
    pub class: u16,
    /// Record type.
    pub rtype: RType,
    /// RDATA in uncompressed wire format; names in it keep their letter case.
    pub rdata: Vec<u8>,
    /// Where the record starts.
    pub location: Location,
}

/// A position in a zone file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file (shared by all records of that file).
    pub file: Arc<PathBuf>,
    /// 1-based line on which the record starts.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One open file: the top one or an `$INCLUDE`d one.
struct Frame {
    lexer: Lexer,
    path: Arc<PathBuf>,
    /// Canonical path, for include-loop detection (when it can be known).
    canonical: Option<PathBuf>,
    origin: Name,
    last_owner: Option<Name>,
}

/// Streams the records of a zone file, following `$INCLUDE`.
///
/// ```no_run
/// # use dns::presentation::ZoneFileReader;
/// let origin = "example.com.".parse().unwrap();
/// let reader = ZoneFileReader::open("db.example".as_ref(), origin, Some(3600)).unwrap();
/// for item in reader {
///     match item {
///         Ok(rec) => println!("{} {} {}", rec.owner, rec.ttl, rec.rtype),
///         Err(e) => eprintln!("{e}"),
///     }
/// }
/// ```
pub struct ZoneFileReader {
    stack: Vec<Frame>,
    ttl_directive: Option<u32>,
    last_ttl: Option<u32>,
    soa_minimum: Option<u32>,
    last_class: u16,
    /// Directories `$INCLUDE` may read from besides the including file's
    /// (canonical; see `include.rs`).
    include_dirs: Vec<PathBuf>,
}

impl ZoneFileReader {
    /// Opens `path`; relative names are completed with `origin`, and
    /// `default_ttl` acts as a `$TTL` until the file sets one.
    pub fn open(path: &Path, origin: Name, default_ttl: Option<u32>) -> Result<Self, ParseError> {
        let (reader, canonical) = open_file(path).map_err(|message| ParseError {
            file: path.to_path_buf(),
            line: 0,
            message,
        })?;
        let mut zr = ZoneFileReader::from_reader(path.to_path_buf(), reader, origin, default_ttl);
        zr.stack[0].canonical = Some(canonical);
        Ok(zr)
    }

    /// Reads from `reader`; `name_for_errors` names it in locations and
    /// errors and is the base for relative `$INCLUDE` paths.
    pub fn from_reader(
        name_for_errors: PathBuf,
        reader: Box<dyn BufRead + Send>,
        origin: Name,
        default_ttl: Option<u32>,
    ) -> Self {
        let canonical = std::fs::canonicalize(&name_for_errors).ok();
        ZoneFileReader {
            stack: vec![Frame {
                lexer: Lexer::new(reader),
                path: Arc::new(name_for_errors),
                canonical,
                origin,
                last_owner: None,
            }],
            ttl_directive: default_ttl,
            last_ttl: None,
            soa_minimum: None,
            last_class: CLASS_IN,
            include_dirs: include::process_include_dirs(),
        }
    }

    /// Also allows `$INCLUDE` from `dirs` (and below); each must be an
    /// existing directory. By default only the including file's directory
    /// (and those of [`super::allow_include_dirs`]) may be read.
    pub fn include_from(mut self, dirs: &[PathBuf]) -> Result<Self, String> {
        self.include_dirs.extend(include::canonical_dirs(dirs)?);
        Ok(self)
    }

    /// Handles one entry: `Ok(None)` for a directive.
    fn entry(&mut self, entry: Entry) -> Result<Option<Record>, String> {
        let first = &entry.tokens[0];
        if !entry.blank_owner && !first.is_quoted() && first.text().starts_with(b"$") {
            self.directive(&entry)?;
            return Ok(None);
        }
        self.record(entry).map(Some)
    }

    fn directive(&mut self, entry: &Entry) -> Result<(), String> {
        let frame = self.stack.last_mut().expect("a frame is open");
        let name = entry.tokens[0].show().to_ascii_uppercase();
        let args = &entry.tokens[1..];
        let arg_count = |min: usize, max: usize| {
            if args.len() < min {
                Err(format!("{name} needs an argument"))
            } else if args.len() > max {
                Err(format!("extra argument '{}' to {name}", args[max].show()))
            } else {
                Ok(())
            }
        };
        match name.as_str() {
            "$ORIGIN" => {
                arg_count(1, 1)?;
                frame.origin = parse_name(args[0].text(), &frame.origin)?;
            }
            "$TTL" => {
                arg_count(1, 1)?;
                self.ttl_directive = Some(parse_ttl(args[0].text())?);
            }
            "$INCLUDE" => {
                arg_count(1, 2)?;
                let file = String::from_utf8(unescape(args[0].text())?)
                    .map_err(|_| "$INCLUDE file name is not UTF-8".to_string())?;
                let origin = match args.get(1) {
                    Some(o) => parse_name(o.text(), &frame.origin)?,
                    None => frame.origin.clone(),
                };
                self.include(Path::new(&file), origin)?;
            }
            "$GENERATE" => return Err("unsupported directive $GENERATE".into()),
            _ => return Err(format!("unknown directive {name}")),
        }
        Ok(())
    }

    fn include(&mut self, file: &Path, origin: Name) -> Result<(), String> {
        let frame = self.stack.last().expect("a frame is open");
        let path = if file.is_relative() {
            match frame.path.parent() {
                Some(dir) => dir.join(file),
                None => file.to_path_buf(),
            }
        } else {
            file.to_path_buf()
        };
        if self.stack.len() > MAX_INCLUDE_DEPTH {
            return Err(format!(
                "$INCLUDE nested deeper than {MAX_INCLUDE_DEPTH} levels"
            ));
        }
        let allowed = include::check_include(&path, &frame.path, &self.include_dirs)?;
        let (reader, canonical) = open_file(&allowed)?;
        if self
            .stack
            .iter()
            .any(|f| f.canonical.as_ref() == Some(&canonical))
        {
            return Err(format!(
                "$INCLUDE loop: {} is already being read",
                path.display()
            ));
        }
        let last_owner = frame.last_owner.clone();
        self.stack.push(Frame {
            lexer: Lexer::new(reader),
            path: Arc::new(path),
            canonical: Some(canonical),
            origin,
            last_owner,
        });
        Ok(())
    }

    fn record(&mut self, entry: Entry) -> Result<Record, String> {
        let frame = self.stack.last_mut().expect("a frame is open");
        let mut tokens = entry.tokens.iter();
        let owner = if entry.blank_owner {
            frame
                .last_owner
                .clone()
                .ok_or("no owner name: the first record must not start with a blank")?
        } else {
            let tok = tokens.next().expect("entries are not empty");
            parse_name(tok.text(), &frame.origin)?
        };
        frame.last_owner = Some(owner.clone());

        let head = head(&mut tokens)?;
        let rtype = head.rtype;
        let rdata = rdata_from_text(rtype, tokens.as_slice(), &frame.origin)?;

        let class = head.class.unwrap_or(self.last_class);
        self.last_class = class;
        if rtype == RType::SOA {
            self.soa_minimum = Some(soa_minimum(&rdata));
        }
        let ttl = match head.ttl {
            Some(t) => {
                self.last_ttl = Some(t);
                t
            }
            None => self
                .ttl_directive
                .or(self.last_ttl)
                .or(self.soa_minimum)
                .ok_or("no TTL: give one on the record, or a $TTL directive before it")?,
        };
        Ok(Record {
            owner,
            ttl,
            class,
            rtype,
            rdata,
            location: Location {
                file: frame.path.clone(),
                line: entry.line,
            },
        })
    }
}

/// Opens a file for reading and resolves its canonical path.
fn open_file(path: &Path) -> Result<(Box<dyn BufRead + Send>, PathBuf), String> {
    let fail = |e: std::io::Error| format!("cannot open {}: {e}", path.display());
    let file = File::open(path).map_err(fail)?;
    let canonical = std::fs::canonicalize(path).map_err(fail)?;
    Ok((
        Box::new(BufReader::with_capacity(64 * 1024, file)),
        canonical,
    ))
}

impl Iterator for ZoneFileReader {
    type Item = Result<Record, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let frame = self.stack.last_mut()?;
            let path = frame.path.clone();
            let error = |line: usize, message: String| ParseError {
                file: path.as_ref().clone(),
                line,
                message,
            };
            match frame.lexer.next_entry() {
                Ok(None) => {
                    self.stack.pop();
                }
                Ok(Some(entry)) => {
                    let line = entry.line;
                    match self.entry(entry) {
                        Ok(Some(record)) => return Some(Ok(record)),
                        Ok(None) => {}
                        Err(message) => return Some(Err(error(line, message))),
                    }
                }
                Err(e) => {
                    if e.fatal {
                        self.stack.pop();
                    }
                    return Some(Err(error(e.line, e.message)));
                }
            }
        }
    }
}
