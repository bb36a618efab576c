//! Which secondaries a zone has: its settings document, else the defaults.
//!
//! ```text
//!  for_zone(info) ─► cached for info.gen? ─► the cached list
//!     ─► else zone_settings{_id: apex} (one point read):
//!        notify: [...] ─► parsed (unknown key or bad address: warned, skipped)
//!        none          ─► NotifyConfig::defaults
//!     cached with info.gen: any later publish moves the generation (and
//!     set_zone_notify takes one of its own), so a change is never missed
//!  without defaults: check_loop asks every `settings_check` whether any
//!  settings document exists; while none does, no zone is notified and
//!  nothing is read per change
//! ```

use super::target::{parse_target, Target};
use super::NotifyConfig;
use crate::tsig::TsigKey;
use backend_mongo::Store;
use dns::{Name, ZoneInfo};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Cached lists kept at most (zones notified recently).
const MAX_CACHED: usize = 4096;

/// Each zone's list, with the generation it was read at.
type Cache = HashMap<Name, (i64, Arc<Vec<Target>>)>;

/// The per-zone target lists.
pub(super) struct Targets {
    store: Store,
    defaults: Arc<Vec<Target>>,
    keys: Vec<TsigKey>,
    /// Some zone has a settings document (always true with defaults).
    any_settings: AtomicBool,
    cache: Mutex<Cache>,
}

impl Targets {
    pub(super) fn new(store: Store, config: &NotifyConfig) -> Targets {
        Targets {
            store,
            defaults: Arc::new(config.defaults.clone()),
            keys: config.keys.clone(),
            any_settings: AtomicBool::new(!config.defaults.is_empty()),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The store settings and SOAs are read from.
    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    /// False when no zone can have a secondary (no defaults, no settings).
    pub(super) fn may_have_targets(&self) -> bool {
        self.any_settings.load(Ordering::Acquire)
    }

    /// Keeps `any_settings` current (runs only without defaults).
    pub(super) async fn check_loop(&self, every: Duration) {
        loop {
            match self.store.any_zone_settings().await {
                Ok(any) => self.any_settings.store(any, Ordering::Release),
                Err(e) => tracing::debug!(error = %e, "NOTIFY: settings check failed"),
            }
            tokio::time::sleep(every).await;
        }
    }

    /// The secondaries of `info`'s zone at its generation.
    pub(super) async fn for_zone(&self, info: &ZoneInfo) -> Arc<Vec<Target>> {
        if let Some((gen, list)) = self.lock().get(&info.apex) {
            if *gen == info.gen {
                return list.clone();
            }
        }
        let list = match self.store.zone_settings(&info.apex).await {
            Ok(Some(settings)) => match settings.notify {
                Some(texts) => Arc::new(self.parse_all(&info.apex, &texts)),
                None => self.defaults.clone(),
            },
            Ok(None) => self.defaults.clone(),
            Err(e) => {
                tracing::warn!(zone = %info.apex, error = %e, "NOTIFY: zone settings unreadable; using the defaults");
                return self.defaults.clone();
            }
        };
        let mut cache = self.lock();
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(info.apex.clone(), (info.gen, list.clone()));
        list
    }

    fn parse_all(&self, apex: &Name, texts: &[String]) -> Vec<Target> {
        let parsed = texts.iter().map(|t| parse_target(t, &self.keys));
        parsed
            .filter_map(|r| {
                r.map_err(|e| tracing::warn!(zone = %apex, error = %e, "NOTIFY: target skipped"))
                    .ok()
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}
