//! The flags of `mongodns-perf scenario`, and their parsers.
//!
//! ```text
//!  command line ─► clap ─► ScenarioArgs (--scale 1/100 ─► parse_scale ─► 0.01)
//! ```

use super::SEED_HOT;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags of `mongodns-perf scenario`.
#[derive(clap::Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// Which scenario: `seed-2011` (the only one).
    pub name: String,
    /// Fraction of the seed's sizes and import rate: `1/100` or `0.01`.
    #[arg(long, default_value = "1/100", value_parser = parse_scale)]
    pub scale: f64,
    /// Seconds the three clients, the importer and the signer run together.
    #[arg(long, default_value_t = 60.0, value_parser = parse_positive)]
    pub duration: f64,
    /// Small zones (7 records each). Default: 16,000,000 × scale ÷ 16
    /// (FerretDB writes the seed's ratio too slowly; docs/scenario.md).
    #[arg(long)]
    pub small_zones: Option<u64>,
    /// Which zone `secure-zone` signs during the run: `import` (the zone
    /// the steady import writes into, as the seed's users did) or
    /// `separate` (secure.test., a zone of its own).
    #[arg(long, default_value = "import", value_parser = ["import", "separate"])]
    pub sign_zone: String,
    /// Records of the zone `secure-zone` signs with `--sign-zone separate`
    /// (secure.test.). Default: 16,000,000 × scale ÷ 10.
    #[arg(long)]
    pub sign_records: Option<u64>,
    /// Records per second of the steady import. Default: 7,500 × scale.
    #[arg(long, value_parser = parse_positive)]
    pub import_rate: Option<f64>,
    /// Records of the steady import's file. Default: rate × duration (with a
    /// high --import-rate, cap it to measure the most this machine sustains).
    #[arg(long)]
    pub import_records: Option<u64>,
    /// Names in the first-K and last-K query files. Default: 500,000 × scale.
    #[arg(long)]
    pub first_last: Option<u64>,
    /// Zone the steady import merges into: `big` (example.com., the zone
    /// the clients ask: each publish voids its cached answers) or `small`
    /// (the first small zone).
    #[arg(long, default_value = "big", value_parser = ["big", "small"])]
    pub import_into: String,
    /// Names in the hot query file.
    #[arg(long, default_value_t = SEED_HOT)]
    pub hot: u64,
    /// Sockets per client (each of the three `mongodns-perf` runs).
    #[arg(long, default_value_t = 2)]
    pub perf_sockets: usize,
    /// Queries outstanding per client.
    #[arg(long, default_value_t = 100)]
    pub perf_outstanding: usize,
    /// Freshness samples: names of the steady import watched until answered.
    #[arg(long, default_value_t = 5)]
    pub freshness_samples: usize,
    /// Address the server listens on (UDP and TCP).
    #[arg(long, default_value = "127.0.0.1:5399")]
    pub listen: SocketAddr,
    /// The database server.
    #[arg(
        long,
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017/?directConnection=true"
    )]
    pub mongodb_uri: String,
    /// Database for the scenario: dropped at the start (and at the end
    /// unless --keep-data).
    #[arg(long, default_value = "mongodns_scenario")]
    pub database: String,
    /// Keep the database and the work directory after the run.
    #[arg(long)]
    pub keep_data: bool,
    /// Where mongodns-server, mongodns-import and mongodns-sign are
    /// (default: the directory of this program).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// Extra flag for mongodns-server (repeat), e.g. --server-arg=--workers=1.
    #[arg(long, allow_hyphen_values = true)]
    pub server_arg: Vec<String>,
    /// Start the clients only once the server's log holds this text, e.g.
    /// `"zone resident"` with `--server-arg=--resident-mb=…` (waits up to
    /// 15 minutes; the wait is reported, not counted in the run).
    #[arg(long)]
    pub wait_log: Option<String>,
    /// Directory for the generated files and logs (default: a new one
    /// under the system's temporary directory).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Markdown report to write.
    #[arg(long, default_value = "docs/scenario.md")]
    pub report: PathBuf,
    /// A sentence for the report (e.g. that the machine was shared).
    #[arg(long)]
    pub note: Option<String>,
    /// Also print the figures as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for the signer and the importer after the clients stop.
    #[arg(long, default_value_t = 1800.0, value_parser = parse_positive)]
    pub finish_timeout: f64,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 2011)]
    pub seed: u64,
}

/// Parses `1/100`, `0.01` or `1` (a fraction in (0, 1]).
pub fn parse_scale(text: &str) -> Result<f64, String> {
    let value = match text.split_once('/') {
        Some((a, b)) => {
            let a: f64 = a
                .trim()
                .parse()
                .map_err(|_| format!("{a:?} is not a number"))?;
            let b: f64 = b
                .trim()
                .parse()
                .map_err(|_| format!("{b:?} is not a number"))?;
            if b == 0.0 {
                return Err("division by zero".into());
            }
            a / b
        }
        None => text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a fraction like 1/100 or 0.01"))?,
    };
    if !(value > 0.0 && value <= 1.0) {
        return Err(format!("{text} is not in (0, 1]"));
    }
    Ok(value)
}

fn parse_positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_parse() {
        assert_eq!(parse_scale("1/100").unwrap(), 0.01);
        assert_eq!(parse_scale("0.5").unwrap(), 0.5);
        assert!(parse_scale("2").is_err());
        assert!(parse_scale("1/0").is_err());
        assert!(parse_scale("x").is_err());
    }
}
