//! Multi-zone input cut into one section per zone.
//!
//! ```text
//!  ZoneSource::MultiFile ─► MultiFileSections: lines up to each `$ZONE <apex>`
//!  ZoneSource::Directory ─► one file per zone, named after its apex, in name order
//!  ─► Section (apex, file, line offset, text) ─► Section::reader ─► ZoneFileReader
//! ```

use super::ImportError;
use dns::presentation::ZoneFileReader;
use dns::Name;
use std::io::BufRead;
use std::path::PathBuf;

/// Where the zones of a multi-zone import come from.
#[derive(Clone, Debug)]
pub enum ZoneSource {
    /// One file with `$ZONE <apex>` lines before each zone.
    MultiFile(PathBuf),
    /// A directory: one file per zone, named `<apex>` or `<apex>.zone`
    /// (the final dot of the apex may be left out), read in name order.
    Directory(PathBuf),
}

/// One zone's text in a multi-zone input.
pub(super) struct Section {
    pub(super) apex: Name,
    /// The file it is in.
    pub(super) file: PathBuf,
    /// Lines before the section's first line (for error messages).
    pub(super) line_offset: usize,
    text: String,
}

impl Section {
    pub(super) fn reader(&self) -> ZoneFileReader {
        ZoneFileReader::from_reader(
            self.file.clone(),
            Box::new(std::io::Cursor::new(self.text.clone().into_bytes())),
            self.apex.clone(),
            None,
        )
    }
}

/// Largest zone accepted inside a multi-zone input (it is held in memory).
pub const MAX_SECTION_BYTES: usize = 64 << 20;

/// Streams the zones of a source, one at a time.
pub(super) fn sections(
    source: &ZoneSource,
) -> Result<Box<dyn Iterator<Item = Result<Section, ImportError>> + Send>, ImportError> {
    match source {
        ZoneSource::MultiFile(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| ImportError::Zone(format!("{}: {e}", path.display())))?;
            let lines = std::io::BufReader::with_capacity(1 << 20, file).lines();
            Ok(Box::new(MultiFileSections {
                path: path.clone(),
                lines,
                line: 0,
                next: None,
                done: false,
            }))
        }
        ZoneSource::Directory(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| ImportError::Zone(format!("{}: {e}", dir.display())))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            Ok(Box::new(files.into_iter().map(file_section)))
        }
    }
}

/// A directory's file as the section of the zone it is named after:
/// `<apex>` or `<apex>.zone`, the apex's final dot optional.
fn file_section(file: PathBuf) -> Result<Section, ImportError> {
    let stem = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let apex_text = stem.strip_suffix("zone").unwrap_or(stem);
    let apex_text = apex_text.strip_suffix('.').unwrap_or(apex_text);
    let apex = Name::parse(&format!("{apex_text}."), None).map_err(|e| {
        ImportError::Zone(format!(
            "{}: file name is not a zone name: {e}",
            file.display()
        ))
    })?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ImportError::Zone(format!("{}: {e}", file.display())))?;
    Ok(Section {
        apex,
        file,
        line_offset: 0,
        text,
    })
}

/// The sections of one file, cut at its `$ZONE` lines.
struct MultiFileSections {
    path: PathBuf,
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    line: usize,
    /// The `$ZONE` line read ahead: (apex, its line number).
    next: Option<(Name, usize)>,
    done: bool,
}

/// What one line of a multi-zone file is.
enum Line {
    /// A `$ZONE` line: the apex it names.
    Zone(Name),
    /// Text of the current zone (or, before the first `$ZONE`, nothing).
    Text(String),
}

impl MultiFileSections {
    fn err(&self, line: usize, message: String) -> ImportError {
        ImportError::Invalid {
            file: self.path.clone(),
            line,
            message,
        }
    }

    /// The next line, numbered; None at the end of the file.
    fn next_line(&mut self) -> Option<Result<Line, ImportError>> {
        let line = match self.lines.next()? {
            Err(e) => {
                return Some(Err(ImportError::Zone(format!(
                    "{}: {e}",
                    self.path.display()
                ))))
            }
            Ok(l) => l,
        };
        self.line += 1;
        let Some(rest) = line.strip_prefix("$ZONE") else {
            return Some(Ok(Line::Text(line)));
        };
        let apex_text = rest.split(';').next().unwrap_or_default().trim();
        if apex_text.is_empty() {
            return Some(Err(self.err(self.line, "$ZONE needs a zone name".into())));
        }
        Some(match Name::parse(apex_text, Some(&Name::root())) {
            Ok(apex) => Ok(Line::Zone(apex)),
            Err(e) => Err(self.err(self.line, format!("bad zone name: {e}"))),
        })
    }

    /// The section of the `$ZONE` line read ahead, with `text`.
    fn section(&self, (apex, at): (Name, usize), text: String) -> Section {
        Section {
            apex,
            file: self.path.clone(),
            line_offset: at,
            text,
        }
    }
}

impl Iterator for MultiFileSections {
    type Item = Result<Section, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut text = String::new();
        while let Some(line) = self.next_line() {
            match line {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(Line::Zone(apex)) => {
                    if let Some(previous) = self.next.replace((apex, self.line)) {
                        return Some(Ok(self.section(previous, text)));
                    }
                }
                Ok(Line::Text(line)) if self.next.is_none() => {
                    let t = line.trim();
                    if !t.is_empty() && !t.starts_with(';') {
                        return Some(Err(self.err(
                            self.line,
                            "a multi-zone file must start with a $ZONE line".into(),
                        )));
                    }
                }
                Ok(Line::Text(line)) => {
                    text.push_str(&line);
                    text.push('\n');
                    if text.len() > MAX_SECTION_BYTES {
                        self.done = true;
                        return Some(Err(self.err(
                            self.line,
                            format!("zone larger than {MAX_SECTION_BYTES} bytes: import it from a file of its own"),
                        )));
                    }
                }
            }
        }
        self.done = true;
        let last = self.next.take()?;
        Some(Ok(self.section(last, text)))
    }
}
