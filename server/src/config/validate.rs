//! Checks of the effective configuration: every problem found, each
//! naming its option, before anything starts.
//!
//! ```text
//!  Config::validate ─► listeners, limits, database, transfers and NOTIFY,
//!     logging, the HTTP API ─► Err(every problem) or Ok
//! ```

use super::{canonical_read_preference, Config, READ_PREFERENCES};
use crate::cidr::Cidr;
use std::path::Path;

impl Config {
    /// Every problem found, each naming the option.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut p = Vec::new();
        self.listener_problems(&mut p);
        self.limit_problems(&mut p);
        self.database_problems(&mut p);
        self.transfer_problems(&mut p);
        self.logging_problems(&mut p);
        p.extend(self.api_problems());
        if p.is_empty() {
            Ok(())
        } else {
            Err(p)
        }
    }

    /// The DNS and control addresses.
    fn listener_problems(&self, p: &mut Vec<String>) {
        if self.listen.is_empty() {
            p.push("listen: at least one address is needed".to_string());
        }
        let mut seen = std::collections::HashSet::new();
        for addr in &self.listen {
            if !seen.insert(addr) {
                p.push(format!("listen: {addr} is given twice"));
            }
        }
        if let Some(addr) = self.control_listen {
            if self.listen.contains(&addr) {
                p.push(format!("control_listen: {addr} is also a DNS address"));
            }
        }
    }

    /// Sizes, counts and timeouts of the answer path.
    fn limit_problems(&self, p: &mut Vec<String>) {
        if self.workers > 1024 {
            p.push(format!("workers: {} is more than 1024", self.workers));
        }
        if self.max_udp_size < 512 {
            p.push(format!(
                "max_udp_size: {} is below 512, the DNS minimum",
                self.max_udp_size
            ));
        }
        for (name, v) in [
            ("query_timeout_ms", self.query_timeout_ms),
            ("tcp_max_connections", self.tcp_max_connections as u64),
            ("udp_max_misses", self.udp_max_misses as u64),
            ("tcp_idle_timeout", self.tcp_idle_timeout),
            ("tcp_io_timeout_ms", self.tcp_io_timeout_ms),
            ("tcp_max_lifetime", self.tcp_max_lifetime),
            ("tcp_permit_timeout_ms", self.tcp_permit_timeout_ms),
        ] {
            if v == 0 {
                p.push(format!("{name}: must be above 0"));
            }
        }
        if self.udp_coalesce_us > 1000 {
            p.push(format!(
                "udp_coalesce_us: {} is over 1000 (a wait that long is latency, not batching)",
                self.udp_coalesce_us
            ));
        }
        if !(1..=32).contains(&self.udp_batch) {
            p.push(format!(
                "udp_batch: {} is not between 1 and 32",
                self.udp_batch
            ));
        }
        if self.freshness_ms < 10 {
            p.push(format!(
                "freshness_ms: {} is below 10 ms",
                self.freshness_ms
            ));
        }
        if let Err(e) = crate::resident::ZoneChoice::parse(&self.resident_zones) {
            p.push(e);
        }
        if let Some(Err(e)) = self.nsid.as_deref().map(crate::edns::options::parse_nsid) {
            p.push(format!("nsid: {e}"));
        }
    }

    /// The connection to MongoDB.
    fn database_problems(&self, p: &mut Vec<String>) {
        if !(self.mongodb_uri.starts_with("mongodb://")
            || self.mongodb_uri.starts_with("mongodb+srv://"))
        {
            p.push("mongodb_uri: must start with mongodb:// or mongodb+srv://".into());
        }
        if self.database.is_empty() || self.database.contains(['/', '\\', '.', ' ', '"', '$']) {
            p.push(format!(
                "database: {:?} is not a valid database name",
                self.database
            ));
        }
        if canonical_read_preference(&self.read_preference).is_none() {
            p.push(format!(
                "read_preference: {:?} is not one of {}",
                self.read_preference,
                READ_PREFERENCES.join(", ")
            ));
        }
        if let Some(s) = self.read_max_staleness_s {
            if s < 90 {
                p.push(format!(
                    "read_max_staleness_s: {s} is below MongoDB's minimum of 90"
                ));
            }
            if canonical_read_preference(&self.read_preference) == Some("primary") {
                p.push("read_max_staleness_s: not allowed with read_preference primary".into());
            }
        }
        if self.db_timeout_ms == 0 {
            p.push("db_timeout_ms: must be above 0".into());
        }
        if self.db_check_timeout_ms == 0 {
            p.push("db_check_timeout_ms: must be above 0".into());
        }
    }

    /// Zone transfers, NOTIFY and the catalog zone.
    fn transfer_problems(&self, p: &mut Vec<String>) {
        for net in self.axfr_allow.iter().filter(|n| !n.is_empty()) {
            if let Err(e) = net.parse::<Cidr>() {
                p.push(format!("axfr_allow: {e}"));
            }
        }
        for target in &self.notify {
            if let Err(e) = crate::notify::check_syntax(target) {
                p.push(format!("notify: {e}"));
            }
        }
        if self.notify_retries == 0 || self.notify_timeout_ms == 0 {
            p.push("notify_retries, notify_timeout_ms: must be above 0".into());
        }
        if self.catalog().is_err() {
            p.push(format!(
                "catalog_zone: {:?} is not a domain name",
                self.catalog_zone.as_deref().unwrap_or_default()
            ));
        }
    }

    /// The log filter and the query log.
    fn logging_problems(&self, p: &mut Vec<String>) {
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log) {
            p.push(format!("log: {:?} is not a valid filter: {e}", self.log));
        }
        if self.query_log_sample == 0 {
            p.push("query_log_sample: must be 1 (every query) or more".into());
        }
        if self.query_log_buffer == 0 || self.query_log_buffer > 1 << 22 {
            p.push("query_log_buffer: must be between 1 and 4194304".into());
        }
        let Some(dest) = &self.query_log else {
            return;
        };
        if dest.is_empty() {
            p.push("query_log: empty destination".into());
        } else if !dest.starts_with("syslog") {
            let parent = Path::new(dest)
                .parent()
                .filter(|d| !d.as_os_str().is_empty());
            if let Some(dir) = parent.filter(|d| !d.is_dir()) {
                p.push(format!(
                    "query_log: directory {} does not exist",
                    dir.display()
                ));
            }
        }
    }

    /// What is wrong with the HTTP API's options.
    fn api_problems(&self) -> Vec<String> {
        let Some(addr) = self.api_listen else {
            return Vec::new();
        };
        let mut p = Vec::new();
        if self.api_key.as_deref().is_none_or(str::is_empty) {
            p.push("api_listen needs api_key (--api-key or MONGODNS_API_KEY)".into());
        }
        if self.listen.contains(&addr) || self.control_listen == Some(addr) {
            p.push(format!(
                "api_listen: {addr} is already used by another listener"
            ));
        }
        p
    }
}
