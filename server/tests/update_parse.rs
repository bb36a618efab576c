//! Parsing a DNS UPDATE happens before its TSIG is checked, so what it
//! allocates must follow the bytes received, not the counts a header
//! claims.
//!
//! ```text
//!  a counting allocator (this thread's bytes, while switched on)
//!  ─► parse_update(20-byte datagram claiming 65,535 prerequisites and
//!     65,535 updates) ─► FORMERR, and under 4 KiB allocated
//! ```

use mongodns_server::update::parse_update;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes this thread asks for while
/// `COUNTING` is on.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated on this thread while `f` runs.
fn allocated_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let out = f();
    COUNTING.with(|c| c.set(false));
    (out, ALLOCATED.load(Ordering::Relaxed) - before)
}

#[test]
fn claimed_counts_do_not_decide_what_parsing_allocates() {
    // Header: ID, opcode 5, one zone, 65,535 prerequisites, 65,535
    // updates; zone section: the root, SOA, IN; then 3 stray bytes.
    let mut datagram = vec![0x12, 0x34, 0x28, 0x00, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0];
    datagram.extend_from_slice(&[0, 0, 6, 0, 1, 0, 0, 0]);
    assert_eq!(datagram.len(), 20);
    let (parsed, bytes) = allocated_by(|| parse_update(&datagram));
    println!("a 20-byte UPDATE claiming 131,070 records: {bytes} bytes allocated");
    assert!(parsed.is_err(), "the records it claims are not there");
    assert!(
        bytes < 4096,
        "{bytes} bytes allocated for 20 bytes received"
    );
}
