//! Where `$INCLUDE` may read from.
//!
//! ```text
//!  $INCLUDE path ─► relative to the including file ─► canonical path
//!     (symlinks and `..` resolved)
//!     ├─ not a regular file (FIFO, device, directory) ─► error, never opened
//!     ├─ inside the including file's directory ─► allowed
//!     ├─ inside a configured directory (--include-dir) ─► allowed
//!     └─ anywhere else (absolute paths, `..`, symlinks out) ─► error
//! ```
//!
//! A zone file is data, possibly written by someone else than the operator
//! who runs the importer: it must not make the importer read `/etc/shadow`,
//! block on a FIFO or read a device without end.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Directories every reader of this process may include from, besides the
/// including file's own (set once by the importer's `--include-dir`).
static PROCESS_INCLUDE_DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Allows `$INCLUDE` from `dirs` (and below) for every zone file read from
/// now on in this process; each must be an existing directory. Can be set
/// once; a second call fails.
pub fn allow_include_dirs(dirs: &[PathBuf]) -> Result<(), String> {
    let canonical = canonical_dirs(dirs)?;
    PROCESS_INCLUDE_DIRS
        .set(canonical)
        .map_err(|_| "the include directories are already set".to_string())
}

/// The directories [`allow_include_dirs`] set (none by default).
pub(crate) fn process_include_dirs() -> Vec<PathBuf> {
    PROCESS_INCLUDE_DIRS.get().cloned().unwrap_or_default()
}

/// `dirs`, canonical; an error names one that is not a directory.
pub(crate) fn canonical_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    dirs.iter()
        .map(|d| {
            let c = std::fs::canonicalize(d)
                .map_err(|e| format!("include directory {}: {e}", d.display()))?;
            match c.is_dir() {
                true => Ok(c),
                false => Err(format!(
                    "include directory {}: not a directory",
                    d.display()
                )),
            }
        })
        .collect()
}

/// The canonical path of `file` (already resolved against the including
/// file `includer`), when `$INCLUDE` may read it: a regular file inside
/// `includer`'s directory or one of `dirs` (canonical).
pub(crate) fn check_include(
    file: &Path,
    includer: &Path,
    dirs: &[PathBuf],
) -> Result<PathBuf, String> {
    let canonical =
        std::fs::canonicalize(file).map_err(|e| format!("cannot open {}: {e}", file.display()))?;
    if !canonical.is_file() {
        return Err(format!(
            "$INCLUDE {}: not a regular file (FIFOs, devices and directories are refused)",
            file.display()
        ));
    }
    let own_dir = includer_dir(includer);
    if own_dir.iter().chain(dirs).any(|d| canonical.starts_with(d)) {
        return Ok(canonical);
    }
    Err(format!(
        "$INCLUDE {}: outside the including file's directory{}; allow another directory with --include-dir",
        file.display(),
        own_dir.map_or(String::new(), |d| format!(" ({})", d.display())),
    ))
}

/// The canonical directory of the including file, if it can be known.
fn includer_dir(includer: &Path) -> Option<PathBuf> {
    let dir = match includer.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::canonicalize(dir).ok()
}
