//! Writes that run to their end: a write the server begins on a client's
//! behalf (an HTTP API request, a DNS UPDATE) runs on a task of its own,
//! so that the client leaving (a closed connection, the API's request
//! timeout) never cuts a change-set half written.
//!
//! ```text
//!  to_end(work) ─► tokio::spawn(work) ─► its JoinHandle awaited
//!     the awaiting future dropped ─► the task goes on to its end
//!     the task panicked ─► Err (the caller answers with a server error)
//! ```
//!
//! A change-set cut half-way would leave records written into the served
//! version with no serial bump, no journal entry and, in a secured zone,
//! no signatures (docs/updates.md, "What is written").

use std::future::Future;

/// Runs `work` on a task of its own and waits for it; the task goes on
/// when the caller is dropped. `Err` only when the task panicked.
pub async fn to_end<T, F>(work: F) -> Result<T, tokio::task::JoinError>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    tokio::spawn(work).await
}
