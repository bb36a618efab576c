//! The sizes of one run: the seed's, times the scale, as the flags adjust them.
//!
//! ```text
//!  ScenarioArgs ─► Plan::new ─► big zone, small zones, zone to sign,
//!                               steady import (rate × duration), query files
//!               └─► Err naming the flag when the sizes do not fit
//! ```

use super::{
    ScenarioArgs, BIG_APEX, SECURE_APEX, SEED_FIRST_LAST, SEED_IMPORT_RATE, SEED_RECORDS,
    SMALL_SUFFIX, SMALL_ZONES_DIVISOR,
};
use crate::zonegen::{self, BigZone, SmallZones};

/// Sizes of one run, from the flags.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scale.
    pub scale: f64,
    /// Records of the big zone.
    pub big_records: u64,
    /// Small zones.
    pub small_zones: u64,
    /// Records of the zone signed during the run.
    pub sign_records: u64,
    /// Steady import rate (records per second).
    pub import_rate: f64,
    /// Records of the steady import (rate × duration).
    pub import_records: u64,
    /// Names in the first-K and last-K files.
    pub first_last: u64,
    /// Apex of the zone the steady import merges into.
    pub import_apex: String,
    /// Apex of the zone `secure-zone` signs during the run.
    pub sign_apex: String,
    /// Names in the hot file.
    pub hot: u64,
    /// Seconds of load.
    pub duration: f64,
}

impl Plan {
    /// The sizes for `args`; errors name the flag.
    pub fn new(args: &ScenarioArgs) -> Result<Plan, String> {
        let s = args.scale;
        let scaled = |n: u64| ((n as f64 * s).round() as u64).max(1);
        let big_records = scaled(SEED_RECORDS).max(zonegen::FIXED_RECORDS + 10);
        let small_zones = args
            .small_zones
            .unwrap_or_else(|| scaled(SEED_RECORDS) / SMALL_ZONES_DIVISOR);
        let sign_records = args
            .sign_records
            .unwrap_or_else(|| scaled(SEED_RECORDS) / 10)
            .max(zonegen::FIXED_RECORDS + 1);
        let import_rate = args.import_rate.unwrap_or(SEED_IMPORT_RATE * s);
        let import_records = args
            .import_records
            .unwrap_or((import_rate * args.duration).round() as u64)
            .max(1);
        let first_last = args.first_last.unwrap_or_else(|| scaled(SEED_FIRST_LAST));
        check_counts(args, first_last, big_records)?;
        let import_apex = import_apex(args, small_zones)?;
        let sign_apex = if args.sign_zone == "separate" {
            SECURE_APEX.to_string()
        } else {
            import_apex.clone()
        };
        if args.listen.port() == 0 {
            return Err("--listen needs a port".into());
        }
        Ok(Plan {
            scale: s,
            big_records,
            small_zones,
            sign_records,
            import_rate,
            import_records,
            first_last,
            import_apex,
            sign_apex,
            hot: args.hot,
            duration: args.duration,
        })
    }
}

/// The counts of the flags: at least 1, and no more query names than the
/// big zone has.
fn check_counts(args: &ScenarioArgs, first_last: u64, big_records: u64) -> Result<(), String> {
    if first_last == 0 || args.hot == 0 {
        return Err("--first-last and --hot must be at least 1".into());
    }
    if args.perf_sockets == 0 || args.perf_outstanding == 0 {
        return Err("--perf-sockets and --perf-outstanding must be at least 1".into());
    }
    if args.freshness_samples == 0 {
        return Err("--freshness-samples must be at least 1".into());
    }
    let names = BigZone::new(BIG_APEX, args.seed, big_records).name_count();
    if first_last > names || args.hot > names {
        return Err(format!(
            "the big zone has {names} names at this scale: --first-last ({first_last}) \
             and --hot ({}) must not exceed that",
            args.hot
        ));
    }
    Ok(())
}

/// The apex the steady import merges into (--import-into).
fn import_apex(args: &ScenarioArgs, small_zones: u64) -> Result<String, String> {
    if args.import_into != "small" {
        return Ok(BIG_APEX.to_string());
    }
    if small_zones == 0 {
        return Err("--import-into small needs --small-zones of at least 1".into());
    }
    Ok(SmallZones::new(args.seed, small_zones, SMALL_SUFFIX).apex(0))
}
