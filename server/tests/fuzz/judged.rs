//! How many inputs each fuzz target judged: an input counts once its
//! target's property was checked on it (not when the target returned
//! early on input it cannot use), so a run can be held to a floor of work.
//!
//! ```text
//!  target ─► property checked ─► count(kind)    (this thread's tally)
//!  runner ─► so_far(kind) before and after ─► judged in the run
//! ```

use std::cell::Cell;

/// What a count is of.
#[derive(Clone, Copy, Debug)]
pub enum Judged {
    /// A query-path reply checked (parses, ID, QR, size; cache agrees).
    Reply,
    /// A zone-file input parsed to its end.
    ZoneFile,
    /// Two queries' packet-cache keys compared.
    PacketKey,
    /// A TSIG-signed (or badly signed) query's verdict checked.
    Tsig,
    /// A DO=1 reply in a signed zone checked for its DNSSEC records.
    Dnssec,
}

thread_local! {
    static TALLY: [Cell<u64>; 5] = const { [const { Cell::new(0) }; 5] };
}

/// Counts one input judged as `kind` on this thread.
pub fn count(kind: Judged) {
    TALLY.with(|t| t[kind as usize].set(t[kind as usize].get() + 1));
}

/// Inputs judged as `kind` on this thread so far.
pub fn so_far(kind: Judged) -> u64 {
    TALLY.with(|t| t[kind as usize].get())
}
