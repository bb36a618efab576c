//! The machine a run is measured on, for the report.
//!
//! ```text
//!  /proc/cpuinfo, /proc/meminfo, /etc/os-release, kernel ─┐
//!  the database's buildInfo (MongoDB or FerretDB) ────────┴─► (label, value) rows
//!  loadavg() at the start and the end;  utc_now() for the report's date
//! ```

use backend_mongo::Store;

/// The 1, 5 and 15 minute load averages.
pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The time now, as `YYYY-MM-DD HH:MM UTC`.
pub(super) fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86400, secs % 86400);
    let (y, m, d) = dns::civil::civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Cores, memory, OS and database, for the report.
pub(super) async fn describe_machine(store: &Store) -> Vec<(String, String)> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown model".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let os = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|s| s.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let database = match store.build_info().await {
        Ok(info) => {
            let version = info.version.unwrap_or_else(|| "?".into());
            match info.ferretdb {
                Some(f) => {
                    format!("FerretDB {f} (answers as MongoDB {version}; docs/dev-database.md)")
                }
                None => format!("MongoDB {version}"),
            }
        }
        Err(e) => format!("unknown ({e})"),
    };
    vec![
        ("cores".into(), format!("{cores} ({model})")),
        (
            "memory".into(),
            format!("{:.1} GiB", mem_kb as f64 / 1024.0 / 1024.0),
        ),
        ("OS".into(), format!("{os}, Linux {}", kernel.trim())),
        ("database".into(), database),
    ]
}
