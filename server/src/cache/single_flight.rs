//! Single flight: concurrent requests for one key share one read, and
//! that read runs as a task of its own.
//!
//! ```text
//!  run(key, fetch) ─► a flight for key in the map?
//!     yes ─► wait for its result (fetch is dropped)
//!     no  ─► spawn fetch as a task (Landing removes the key however it
//!            ends) ─► wait for its result
//!  result: the value, the shared fault, or Busy when the task died
//! ```
//!
//! Generic over key and value; the record cache keeps one per kind of read
//! (zones, nodes, denial records).

use crate::backend::StoreError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// What a finished flight left for its waiters.
type Landed<V> = Option<Result<V, Arc<StoreError>>>;

/// Concurrent requests for one key share one database read, and that read
/// is *detached*: it runs as a task of its own, so it finishes (and fills
/// the cache) even when every caller gave up waiting. Without this, a slow
/// database under a cold cache never warms: each read is cancelled by its
/// query's timeout and started again by the next query.
pub(super) struct Flights<K, V> {
    flights: Mutex<HashMap<K, watch::Receiver<Landed<V>>>>,
}

/// Removes a flight from the map however its task ends (even by panic).
struct Landing<'a, K: std::hash::Hash + Eq, V> {
    flights: &'a Flights<K, V>,
    key: K,
}

impl<K: std::hash::Hash + Eq, V> Drop for Landing<'_, K, V> {
    fn drop(&mut self) {
        let mut map = self
            .flights
            .flights
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.remove(&self.key);
    }
}

impl<K, V> Flights<K, V>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// No flight yet.
    pub(super) fn new() -> Self {
        Flights {
            flights: Mutex::new(HashMap::new()),
        }
    }

    /// The result of `fetch` for `key`, or of the read already in flight
    /// for it. A failure is shared with the callers waiting at that moment;
    /// the next caller starts a new read.
    pub(super) async fn run<Fut>(self: &Arc<Self>, key: &K, fetch: Fut) -> Result<V, StoreError>
    where
        Fut: std::future::Future<Output = Result<V, StoreError>> + Send + 'static,
    {
        self.lead_or_join(key, fetch).await.1
    }

    /// As [`Flights::run`], and whether this call started the read (true)
    /// or waited for one already in flight (false; `fetch` is dropped).
    pub(super) async fn lead_or_join<Fut>(
        self: &Arc<Self>,
        key: &K,
        fetch: Fut,
    ) -> (bool, Result<V, StoreError>)
    where
        Fut: std::future::Future<Output = Result<V, StoreError>> + Send + 'static,
    {
        let (led, mut landed) = {
            let mut map = self.flights.lock().unwrap_or_else(|p| p.into_inner());
            match map.get(key) {
                Some(rx) => (false, rx.clone()),
                None => {
                    let (tx, rx) = watch::channel(None);
                    map.insert(key.clone(), rx.clone());
                    let flights = self.clone();
                    let key = key.clone();
                    tokio::spawn(async move {
                        let _landing = Landing {
                            flights: &flights,
                            key,
                        };
                        let result = fetch.await.map_err(Arc::new);
                        let _ = tx.send(Some(result));
                    });
                    (true, rx)
                }
            }
        };
        let outcome = match landed.wait_for(Option::is_some).await {
            Ok(done) => done.clone(),
            Err(_) => None, // the task ended without a result (a panic)
        };
        let result = match outcome {
            Some(Ok(value)) => Ok(value),
            Some(Err(fault)) => Err(StoreError::Shared(fault)),
            None => Err(StoreError::Busy("a database read was abandoned".into())),
        };
        (led, result)
    }
}
