//! Zone text imported into a test database in-process, by the importer.
//!
//! ```text
//!  TestZoneDb::new(tag) ─► db.import(zone, text, replace)
//!      text ─► a file in db.dir ─► loadtools::import::import_file
//!      (small batches, 3 in flight, no grace) ─► ImportSummary
//! ```

use backend_mongo::testing::TestDb;
use backend_mongo::Name;
use loadtools::import::{import_file, ImportError, ImportOptions, ImportSummary, NoProgress};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A test database that zone text is imported into ([`ZoneImport`]).
pub type TestZoneDb = TestDb;

/// Imports zone text into a [`TestDb`].
#[allow(async_fn_in_trait)]
pub trait ZoneImport {
    /// Imports `text` as zone `zone`; panics when the import fails.
    async fn import(&self, zone: &str, text: &str, replace: bool) -> ImportSummary;

    /// Imports `text` as zone `zone`, returning the error if any.
    async fn try_import(
        &self,
        zone: &str,
        text: &str,
        replace: bool,
    ) -> Result<ImportSummary, ImportError>;
}

impl ZoneImport for TestDb {
    async fn import(&self, zone: &str, text: &str, replace: bool) -> ImportSummary {
        self.try_import(zone, text, replace)
            .await
            .expect("import failed")
    }

    async fn try_import(
        &self,
        zone: &str,
        text: &str,
        replace: bool,
    ) -> Result<ImportSummary, ImportError> {
        static FILES: AtomicUsize = AtomicUsize::new(0);
        let n = FILES.fetch_add(1, Ordering::SeqCst);
        let path = self.dir.join(format!("zone{n}.txt"));
        std::fs::write(&path, text).unwrap();
        let options = ImportOptions {
            zone: zone.parse::<Name>().unwrap(),
            replace,
            batch_size: 7,
            in_flight: 3,
            grace: Duration::from_millis(0),
        };
        import_file(&self.store, &path, &options, &NoProgress).await
    }
}
