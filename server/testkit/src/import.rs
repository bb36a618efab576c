//! Zone text imported into a test database in-process, by the importer.
//!
//! ```text
//!  TestZoneDb::new(tag) ─► db.import(zone, text, replace)
//!      text ─► a file in db.dir ─► loadtools::import::import_file
//!      (small batches, 3 in flight, no grace) ─► ImportSummary
//!  zone_db(tag, zone, text): both at once, for a test's one zone
//!  small_zone!(apex, records): zone text with the usual SOA, NS and ns A
//! ```

use backend_mongo::testing::TestDb;
use backend_mongo::Name;
use loadtools::import::{import_file, ImportError, ImportOptions, ImportSummary, NoProgress};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A test database that zone text is imported into ([`ZoneImport`]).
pub type TestZoneDb = TestDb;

/// The text of a small test zone at `$apex` (a literal with its final
/// dot): `$TTL 300`, an SOA (serial 1, negative TTL 60), `NS ns.$apex`,
/// `ns.$apex A 192.0.2.53`, then `$records` (relative names, each line
/// ending in `\n`). A `&'static str`, for a `const`.
#[macro_export]
macro_rules! small_zone {
    ($apex:literal, $records:literal) => {
        concat!(
            "$ORIGIN ",
            $apex,
            "\n$TTL 300\n",
            "@ IN SOA ns.",
            $apex,
            " hostmaster.",
            $apex,
            " 1 7200 900 1209600 60\n",
            "@ IN NS ns.",
            $apex,
            "\nns IN A 192.0.2.53\n",
            $records
        )
    };
}

/// A fresh test database (named after `tag`) serving `zone`, imported
/// from `text` whole (a replace).
pub fn zone_db(tag: &str, zone: &str, text: &str) -> TestZoneDb {
    crate::block_on(async {
        let db = TestZoneDb::new(tag).await;
        db.import(zone, text, true).await;
        db
    })
}

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
