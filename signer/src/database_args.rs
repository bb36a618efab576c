//! The database flags every zone-changing tool takes, in one place.
//!
//! ```text
//!  --mongodb-uri (MONGODB_URI)  --database (MONGODNS_DATABASE)
//!  --db-timeout-ms (MONGODNS_DB_TIMEOUT_MS) ─► DatabaseArgs::connect ─► Store
//! ```

use backend_mongo::{Store, StoreError};
use std::time::Duration;

/// Where the zones are: flattened into `mongodns-sign` and `mongodns-zone`.
#[derive(clap::Args, Clone, Debug)]
pub struct DatabaseArgs {
    /// The database.
    #[arg(
        long,
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017/?directConnection=true",
        global = true
    )]
    pub mongodb_uri: String,
    /// Database name.
    #[arg(
        long,
        env = "MONGODNS_DATABASE",
        default_value = "mongodns",
        global = true
    )]
    pub database: String,
    /// Database connect timeout, milliseconds.
    #[arg(
        long,
        env = "MONGODNS_DB_TIMEOUT_MS",
        default_value_t = 3000,
        global = true
    )]
    pub db_timeout_ms: u64,
}

impl DatabaseArgs {
    /// Connects to the database the flags name.
    pub async fn connect(&self) -> Result<Store, StoreError> {
        let timeout = Duration::from_millis(self.db_timeout_ms);
        Store::connect(&self.mongodb_uri, &self.database, timeout).await
    }
}
