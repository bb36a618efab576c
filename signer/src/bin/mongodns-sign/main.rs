//! `mongodns-sign`: DNSSEC keys and signing for zones stored in MongoDB.
//!
//! ```text
//!  one-shot commands (this file) ─► signer:: (secure, resign, keys…)
//!  serve (serve.rs) ─► signer::service      policies, rollover (policy.rs)
//!  show-zone (show.rs)
//! ```

mod policy;
mod serve;
mod show;

use backend_mongo::dnssec_store::{KeyState, Nsec3Config};
use backend_mongo::{ProgressReporter, Store};
use clap::{Parser, Subcommand};
use dns::encoding::from_hex;
use dns::Name;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use signer::export::master_file;
use signer::{crypto, Progress, SecureOptions, SignError, Validity};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "mongodns-sign",
    version,
    about = "DNSSEC for zones stored in MongoDB"
)]
struct Cli {
    #[command(flatten)]
    database: signer::DatabaseArgs,
    /// Signing threads (0: one per core).
    #[arg(long, default_value_t = 0, global = true)]
    threads: usize,
    /// No progress bar.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Make keys (if none), sign the zone and publish it signed, all at once.
    SecureZone(SecureZoneArgs),
    /// Delete old versions of a zone left by an earlier run (--no-cleanup,
    /// or a run killed after its switch). Safe to run at any time.
    Cleanup(CleanupArgs),
    /// Re-sign what changed and what nears expiry (in place).
    Resign(ResignArgs),
    /// Keys, key tags, DNSKEY and DS records (for the parent zone).
    ShowZone(ZoneArgs),
    /// Remove all DNSSEC data (new version, switched at once).
    UnsecureZone(UnsecureZoneArgs),
    /// Print the zone as a master file (signed when secured).
    ExportZone(ZoneArgs),
    /// Make a new key (published only, unless --active).
    AddKey(AddKeyArgs),
    /// Delete a key (by tag or id); the zone is re-signed without it.
    RemoveKey(KeyArgs),
    /// Start signing with a key.
    ActivateKey(KeyArgs),
    /// Stop signing with a key; it stays published until removed.
    RetireKey(KeyArgs),
    /// The signing service: keeps every secured zone signed (other
    /// writers' changes, signatures before they expire) and rolls keys by
    /// policy. Run two or more for high availability.
    Serve(serve::ServeArgs),
    /// Store a named key and signing policy (settings not given: the defaults).
    AddPolicy(policy::AddPolicyArgs),
    /// Every stored policy.
    ListPolicies,
    /// Put a zone under a policy (the signing service secures it if needed).
    SetPolicy(policy::SetPolicyArgs),
    /// Roll a zone's KSK, ZSK or CSK now (by the signing service).
    Rollover(policy::RolloverArgs),
    /// The parent serves the new KSK's DS (when the parent cannot be asked).
    KskSubmitted(policy::SubmittedArgs),
}

/// The arguments of `secure-zone`.
#[derive(clap::Args)]
struct SecureZoneArgs {
    /// The zone.
    zone: String,
    /// Algorithm for new keys: ecdsap256sha256 (13), ed25519 (15), rsasha256 (8).
    #[arg(long, default_value = "ecdsap256sha256")]
    algorithm: String,
    /// Use NSEC3 (RFC 5155) instead of NSEC.
    #[arg(long)]
    nsec3: bool,
    /// NSEC3 extra iterations (RFC 9276: 0; anything else needs
    /// --force-iterations, and at most 100).
    #[arg(long, default_value_t = 0, requires = "nsec3")]
    iterations: u16,
    /// Accept --iterations above 0 (RFC 9276 §3.1 says 0: more costs
    /// every server and resolver work and adds no security).
    #[arg(long, requires = "nsec3")]
    force_iterations: bool,
    /// NSEC3 salt in hex, or "-" for none (RFC 9276: none).
    #[arg(long, default_value = "-", requires = "nsec3")]
    salt: String,
    /// NSEC3 opt-out: unsigned delegations stay out of the chain.
    #[arg(long, requires = "nsec3")]
    opt_out: bool,
    /// One combined signing key (CSK) instead of a KSK and a ZSK.
    #[arg(long)]
    csk: bool,
    /// Publish CDS and CDNSKEY (RFC 7344) so the parent can follow KSK changes.
    #[arg(long)]
    cds: bool,
    /// Seconds the previous version stays readable after the switch.
    #[arg(long, default_value_t = 3)]
    grace: u64,
    /// Exit after the switch, leaving the replaced version (never
    /// served) for `cleanup` or the next run to delete.
    #[arg(long)]
    no_cleanup: bool,
}

/// The arguments of `cleanup`.
#[derive(clap::Args)]
struct CleanupArgs {
    /// The zone.
    zone: String,
    /// Seconds to wait after the zone's last switch before deleting.
    #[arg(long, default_value_t = 3)]
    grace: u64,
}

/// The arguments of `resign`.
#[derive(clap::Args)]
struct ResignArgs {
    /// The zone.
    zone: String,
    /// Keep running: re-sign whenever the zone changes.
    #[arg(long)]
    follow: bool,
    /// Seconds between checks with --follow.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// With --follow: seconds between full passes (every node read,
    /// signatures near expiry refreshed); changes in between are
    /// re-signed by reading only the names they list.
    #[arg(long, default_value_t = 3600)]
    full_every: u64,
    /// Replace every signature, not only the stale ones.
    #[arg(long)]
    full: bool,
}

/// The zone a command acts on.
#[derive(clap::Args)]
struct ZoneArgs {
    /// The zone.
    zone: String,
}

/// The arguments of `unsecure-zone`.
#[derive(clap::Args)]
struct UnsecureZoneArgs {
    /// The zone.
    zone: String,
    /// Keep the keys in the database.
    #[arg(long)]
    keep_keys: bool,
    /// Exit after the switch, leaving the replaced version for `cleanup`.
    #[arg(long)]
    no_cleanup: bool,
}

/// The arguments of `add-key`.
#[derive(clap::Args)]
struct AddKeyArgs {
    /// The zone.
    zone: String,
    /// A KSK (flags 257) instead of a ZSK (256).
    #[arg(long)]
    ksk: bool,
    /// Start signing with it at once.
    #[arg(long)]
    active: bool,
    /// Algorithm.
    #[arg(long, default_value = "ecdsap256sha256")]
    algorithm: String,
}

/// One key of a zone.
#[derive(clap::Args)]
struct KeyArgs {
    /// The zone.
    zone: String,
    /// Key tag or id.
    key: String,
}

/// The terminal bar, and the `progress` document (kind `sign`) that every
/// server shows on `/metrics` (the importer's mechanism, `ProgressReporter`).
struct Bar {
    bar: ProgressBar,
    job: ProgressReporter,
    /// `--follow` has reported its first pass.
    followed: std::sync::atomic::AtomicBool,
}

impl signer::Progress for Bar {
    fn phase(&self, name: &str, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_message(name.to_string());
        self.job.set_phase(name, total);
    }
    fn set(&self, done: u64) {
        self.bar.set_position(done);
        self.job.set_done(done);
    }
    fn resigned(&self, zone: &Name, report: &signer::Report, elapsed: Duration) {
        // `--follow`: the job's count is signatures made since it started.
        self.job.add_done(report.stats.signed);
        // The first pass is always reported: from then on what others
        // write is signed from their change records.
        let first = !self
            .followed
            .swap(true, std::sync::atomic::Ordering::Relaxed);
        if report.written > 0 || first {
            eprintln!(
                "resigned {zone}: {} signatures made, {} changes written, serial {}, {} nodes read, {:.2} s",
                report.stats.signed,
                report.written,
                report.serial,
                report.nodes,
                elapsed.as_secs_f64()
            );
        }
    }
}

impl Bar {
    /// Starts the bar (hidden when `quiet`) and the job's progress reports.
    fn start(store: &Store, zone: &Name, quiet: bool) -> Bar {
        let bar = ProgressBar::new(0);
        if quiet {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{msg:>9} [{bar:40}] {pos}/{len} {per_sec} {eta}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
        }
        let job = ProgressReporter::start(
            store.clone(),
            "sign",
            &zone.to_string(),
            Duration::from_secs(1),
        );
        Bar {
            bar,
            job,
            followed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Clears the bar and records the job's final state.
    async fn finish<T>(self, result: &Result<T, SignError>) {
        self.bar.finish_and_clear();
        self.job.finish(result.is_ok()).await;
    }
}

fn steps(r: &signer::Report) -> String {
    r.timings
        .iter()
        .map(|(name, d)| format!("{name} {:.2} s", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn parse_zone(text: &str) -> Result<Name, SignError> {
    let text = if text.ends_with('.') {
        text.to_string()
    } else {
        format!("{text}.")
    };
    text.parse()
        .map_err(|e| SignError::Usage(format!("bad zone name {text}: {e}")))
}

/// The NSEC3 parameters of `secure-zone --nsec3`: iterations above 0 only
/// with `force` (RFC 9276 §3.1), at most 100; a hex salt of at most 255
/// octets, or `-` for none.
fn nsec3_config(
    iterations: u16,
    force: bool,
    salt: &str,
    opt_out: bool,
) -> Result<Nsec3Config, SignError> {
    if iterations > 0 && !force {
        return Err(SignError::Usage(format!(
            "--iterations {iterations}: RFC 9276 §3.1 says 0 (extra iterations cost every \
             server and resolver work and add no security); add --force-iterations to use \
             {iterations} anyway"
        )));
    }
    let salt = match salt {
        "-" => Vec::new(),
        hex => from_hex(hex)
            .ok_or_else(|| SignError::Usage(format!("salt {hex} is not hex (or - for none)")))?,
    };
    let cfg = Nsec3Config {
        iterations,
        salt,
        opt_out,
    };
    signer::plan::check_nsec3(&cfg)?;
    Ok(cfg)
}

pub(crate) fn parse_alg(text: &str) -> Result<u8, SignError> {
    crypto::parse_algorithm(text).ok_or_else(|| {
        SignError::Usage(format!(
            "unknown algorithm {text}: use ecdsap256sha256, ed25519 or rsasha256"
        ))
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MONGODNS_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mongodns-sign: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), SignError> {
    let store = cli.database.connect().await?;
    let result = run_command(&store, cli).await;
    // Before the runtime ends, or the driver panics at exit (`Store::shutdown`).
    store.shutdown().await;
    result
}

async fn run_command(store: &Store, cli: Cli) -> Result<(), SignError> {
    store.ensure_dnssec_indexes().await?;
    let how = How {
        threads: cli.threads,
        quiet: cli.quiet,
    };
    match cli.command {
        Command::SecureZone(a) => secure_zone(store, how, a).await,
        Command::Cleanup(a) => cleanup(store, how, a).await,
        Command::Resign(a) => resign(store, how, a).await,
        Command::ShowZone(a) => show::show_zone(store, &parse_zone(&a.zone)?).await,
        Command::UnsecureZone(a) => unsecure_zone(store, how, a).await,
        Command::ExportZone(a) => export_zone(store, a).await,
        Command::AddKey(a) => add_key(store, how, a).await,
        Command::RemoveKey(a) => change_key(store, how, a, KeyChange::Remove).await,
        Command::ActivateKey(a) => change_key(store, how, a, KeyChange::Activate).await,
        Command::RetireKey(a) => change_key(store, how, a, KeyChange::Retire).await,
        Command::Serve(a) => serve::run(store, how.threads, a).await,
        Command::AddPolicy(a) => policy::add_policy(store, a).await,
        Command::ListPolicies => policy::list_policies(store).await,
        Command::SetPolicy(a) => policy::set_policy(store, a).await,
        Command::Rollover(a) => policy::rollover(store, a).await,
        Command::KskSubmitted(a) => policy::ksk_submitted(store, a).await,
    }
}

/// The options every command shares.
#[derive(Clone, Copy)]
struct How {
    /// Signing threads (0: one per core).
    threads: usize,
    /// No progress bar.
    quiet: bool,
}

/// `secure-zone`: sign and switch, report, clean up, show the zone.
async fn secure_zone(store: &Store, how: How, a: SecureZoneArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let nsec3 = match a.nsec3 {
        true => Some(nsec3_config(
            a.iterations,
            a.force_iterations,
            &a.salt,
            a.opt_out,
        )?),
        false => None,
    };
    // A zone's policy sets the validity of its signatures.
    let validity = Validity::of(&store.dnssec_config(&zone).await?);
    let options = SecureOptions {
        algorithm: parse_alg(&a.algorithm)?,
        csk: a.csk,
        nsec3,
        cds: a.cds,
        validity,
        threads: how.threads,
        grace: Duration::from_secs(a.grace),
    };
    let started = Instant::now();
    let b = Bar::start(store, &zone, how.quiet);
    let result = async {
        let r = signer::secure_zone_switch(store, &zone, &options, &b).await?;
        b.bar.suspend(|| {
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "secured {zone}: {} nodes, {} signatures, chain of {}, {} documents written, serial {}, published after {:.2} s ({:.0} signatures/s; {})",
                r.nodes,
                r.stats.signed,
                r.stats.chain,
                r.written,
                r.serial,
                secs,
                r.stats.signed as f64 / secs.max(1e-9),
                steps(&r)
            )
        });
        if !a.no_cleanup {
            let expected = if r.old_ver.is_some() { r.nodes } else { 0 };
            let t = Instant::now();
            let c = signer::cleanup(store, &zone, options.grace, expected, &b).await?;
            report_cleanup(&zone, &c, t, started);
        }
        Ok(())
    }
    .await;
    b.finish(&result).await;
    result?;
    show::show_zone(store, &zone).await
}

/// `cleanup`: delete the zone's old versions.
async fn cleanup(store: &Store, how: How, a: CleanupArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let started = Instant::now();
    let b = Bar::start(store, &zone, how.quiet);
    let result = signer::cleanup(store, &zone, Duration::from_secs(a.grace), 0, &b).await;
    b.finish(&result).await;
    report_cleanup(&zone, &result?, started, started);
    Ok(())
}

/// `resign`, once or (`--follow`) for good.
async fn resign(store: &Store, how: How, a: ResignArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let validity = Validity::default();
    let b = Bar::start(store, &zone, how.quiet || a.follow);
    let started = Instant::now();
    if !a.follow || a.full {
        let r = signer::resign(store, &zone, a.full, &validity, how.threads, &b).await;
        if !a.follow {
            b.finish(&r).await;
            report_resign(&zone, &r?, started);
            return Ok(());
        }
        report_resign(&zone, &r?, started);
    } else if !store.dnssec_config(&zone).await?.secured {
        return Err(signer::SignError::NotSecured(zone.to_string()));
    }
    // The first pass of --follow is a full one.
    b.phase("follow", 0);
    let result = signer::follow(
        store,
        &zone,
        &validity,
        how.threads,
        Duration::from_secs_f64(a.interval.max(0.05)),
        Duration::from_secs(a.full_every.max(1)),
        &b,
    )
    .await;
    b.finish(&result).await;
    result
}

/// `unsecure-zone`: strip and switch, report, clean up.
async fn unsecure_zone(store: &Store, how: How, a: UnsecureZoneArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let started = Instant::now();
    let b = Bar::start(store, &zone, how.quiet);
    let result = async {
        let r = signer::unsecure_zone_switch(store, &zone, a.keep_keys, &b).await?;
        b.bar.suspend(|| {
            eprintln!(
                "unsecured {zone}: {} documents written, serial {}{}, published after {:.2} s",
                r.written,
                r.serial,
                if a.keep_keys { "" } else { ", keys deleted" },
                started.elapsed().as_secs_f64()
            )
        });
        if !a.no_cleanup {
            let t = Instant::now();
            let c = signer::cleanup(store, &zone, Duration::from_secs(3), r.nodes, &b).await?;
            report_cleanup(&zone, &c, t, started);
        }
        Ok(())
    }
    .await;
    b.finish(&result).await;
    result?;
    eprintln!("remove the DS records for {zone} from the parent zone first, if there are any");
    Ok(())
}

/// `export-zone`: the served version as a master file on stdout.
async fn export_zone(store: &Store, a: ZoneArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let info = store
        .find_zone(&zone)
        .await?
        .ok_or_else(|| backend_mongo::StoreError::NoSuchZone(zone.to_string()))?;
    let nodes = store.read_version(&zone, info.ver).await?;
    let text = master_file(&zone, &nodes);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .map_err(|e| SignError::Usage(format!("cannot write: {e}")))
}

/// `add-key`: a new key stored, the zone re-signed when secured.
async fn add_key(store: &Store, how: How, a: AddKeyArgs) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    store.dnssec_config(&zone).await?;
    let state = if a.active {
        KeyState::Active
    } else {
        KeyState::Published
    };
    let flags = if a.ksk { 257 } else { 256 };
    let key = crypto::generate(&zone, parse_alg(&a.algorithm)?, flags, state)?;
    store.insert_key(&key).await?;
    println!(
        "{}\t{}\ttag {}\t{}",
        key.id,
        key.role(),
        key.tag,
        state.as_str()
    );
    resign_if_secured(store, &zone, how.threads).await
}

/// What `remove-key`, `activate-key` and `retire-key` do to a key.
#[derive(Clone, Copy)]
enum KeyChange {
    Remove,
    Activate,
    Retire,
}

/// `remove-key`, `activate-key`, `retire-key`: the key changed, the zone
/// re-signed when secured.
async fn change_key(
    store: &Store,
    how: How,
    a: KeyArgs,
    change: KeyChange,
) -> Result<(), SignError> {
    let zone = parse_zone(&a.zone)?;
    let key = signer::find_key(store, &zone, &a.key).await?;
    let done = match change {
        KeyChange::Remove => {
            store.delete_key(&key.id).await?;
            "removed"
        }
        KeyChange::Activate => {
            store.set_key_state(&key.id, KeyState::Active).await?;
            "activated"
        }
        KeyChange::Retire => {
            store.set_key_state(&key.id, KeyState::Retired).await?;
            "retired"
        }
    };
    println!("{done} {} ({} tag {})", key.id, key.role(), key.tag);
    resign_if_secured(store, &zone, how.threads).await
}

fn report_cleanup(zone: &Name, c: &backend_mongo::Collected, t: Instant, started: Instant) {
    if c.versions.is_empty() {
        eprintln!("cleanup {zone}: no old versions");
    } else {
        eprintln!(
            "cleanup {zone}: old version(s) {:?} deleted, {} documents, {:.2} s (whole run {:.2} s)",
            c.versions,
            c.deleted,
            t.elapsed().as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
    }
}

fn report_resign(zone: &Name, r: &signer::Report, started: Instant) {
    eprintln!(
        "resigned {zone}: {} signatures made, {} RRsets kept, {} changes written, serial {}, {:.2} s",
        r.stats.signed,
        r.stats.reused,
        r.written,
        r.serial,
        started.elapsed().as_secs_f64()
    );
}

async fn resign_if_secured(store: &Store, zone: &Name, threads: usize) -> Result<(), SignError> {
    if store.dnssec_config(zone).await?.secured {
        let started = Instant::now();
        let r = signer::resign(
            store,
            zone,
            false,
            &Validity::default(),
            threads,
            &signer::NoProgress,
        )
        .await?;
        report_resign(zone, &r, started);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nsec3_iterations_need_force_and_stay_within_100() {
        let cfg = nsec3_config(0, false, "-", false).unwrap();
        assert_eq!((cfg.iterations, cfg.salt.len()), (0, 0));
        let err = nsec3_config(1, false, "-", false).unwrap_err().to_string();
        assert!(err.contains("--force-iterations"), "{err}");
        assert_eq!(nsec3_config(10, true, "abcd", true).unwrap().iterations, 10);
        let err = nsec3_config(101, true, "-", false).unwrap_err().to_string();
        assert!(err.contains("101 iterations"), "{err}");
    }

    #[test]
    fn an_nsec3_salt_over_255_octets_is_an_error() {
        assert_eq!(
            nsec3_config(0, false, &"ab".repeat(255), false)
                .unwrap()
                .salt
                .len(),
            255
        );
        let err = nsec3_config(0, false, &"ab".repeat(256), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("salt of 256 octets"), "{err}");
        assert!(nsec3_config(0, false, "xyz", false).is_err());
    }
}
