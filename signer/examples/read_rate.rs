//! The database's raw read rate for a whole zone version: one cursor over
//! every node of the served version of a zone (what `secure-zone` reads),
//! timed. `bench/sign` puts it beside the signer's read step.
//!
//! ```text
//!  read_rate <zone> ─► find_zone ─► Store::read_version ─► "read N documents in S s"
//! ```
//!
//! Uses `$MONGODB_URI` and `$MONGODNS_DATABASE` (default `mongodns`).

use backend_mongo::{Name, Store};
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), String> {
    let zone: Name = std::env::args()
        .nth(1)
        .ok_or("usage: read_rate <zone>")?
        .parse()
        .map_err(|e| format!("zone: {e}"))?;
    let uri = std::env::var("MONGODB_URI")
        .unwrap_or_else(|_| "mongodb://127.0.0.1:27017/?directConnection=true".into());
    let db = std::env::var("MONGODNS_DATABASE").unwrap_or_else(|_| "mongodns".into());
    let store = Store::connect(&uri, &db, Duration::from_secs(10))
        .await
        .map_err(|e| e.to_string())?;
    let served = store
        .find_zone(&zone)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("zone {zone} is not served"))?;
    let t = Instant::now();
    let nodes = store
        .read_version(&zone, served.ver)
        .await
        .map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "read {} documents in {secs:.2} s ({:.0}/s)",
        nodes.len(),
        nodes.len() as f64 / secs
    );
    Ok(())
}
