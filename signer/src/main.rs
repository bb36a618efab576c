//! `mongodns-sign`: DNSSEC keys and signing for zones stored in MongoDB.

use backend_mongo::dnssec::{ds_rdata, from_hex, KeyState, Nsec3Config};
use backend_mongo::{Name, RType, Store};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use signer::export::{master_file, rdata_text};
use signer::{crypto, SecureOptions, SignError, Validity};
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
    /// The database.
    #[arg(
        long,
        env = "MONGODB_URI",
        default_value = "mongodb://127.0.0.1:27017/?directConnection=true",
        global = true
    )]
    mongodb_uri: String,
    /// Database name.
    #[arg(
        long,
        env = "MONGODNS_DATABASE",
        default_value = "mongodns",
        global = true
    )]
    database: String,
    /// Database connect timeout, milliseconds.
    #[arg(
        long,
        env = "MONGODNS_DB_TIMEOUT_MS",
        default_value_t = 3000,
        global = true
    )]
    db_timeout_ms: u64,
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
    SecureZone {
        /// The zone.
        zone: String,
        /// Algorithm for new keys: ecdsap256sha256 (13), ed25519 (15), rsasha256 (8).
        #[arg(long, default_value = "ecdsap256sha256")]
        algorithm: String,
        /// Use NSEC3 (RFC 5155) instead of NSEC.
        #[arg(long)]
        nsec3: bool,
        /// NSEC3 extra iterations (RFC 9276: 0).
        #[arg(long, default_value_t = 0, requires = "nsec3")]
        iterations: u16,
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
    },
    /// Re-sign what changed and what nears expiry (in place).
    Resign {
        /// The zone.
        zone: String,
        /// Keep running: re-sign whenever the zone changes.
        #[arg(long)]
        follow: bool,
        /// Seconds between checks with --follow.
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
        /// Replace every signature, not only the stale ones.
        #[arg(long)]
        full: bool,
    },
    /// Keys, key tags, DNSKEY and DS records (for the parent zone).
    ShowZone {
        /// The zone.
        zone: String,
    },
    /// Remove all DNSSEC data (new version, switched at once).
    UnsecureZone {
        /// The zone.
        zone: String,
        /// Keep the keys in the database.
        #[arg(long)]
        keep_keys: bool,
    },
    /// Print the zone as a master file (signed when secured).
    ExportZone {
        /// The zone.
        zone: String,
    },
    /// Make a new key (published only, unless --active).
    AddKey {
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
    },
    /// Delete a key (by tag or id); the zone is re-signed without it.
    RemoveKey {
        /// The zone.
        zone: String,
        /// Key tag or id.
        key: String,
    },
    /// Start signing with a key.
    ActivateKey {
        /// The zone.
        zone: String,
        /// Key tag or id.
        key: String,
    },
    /// Stop signing with a key; it stays published until removed.
    RetireKey {
        /// The zone.
        zone: String,
        /// Key tag or id.
        key: String,
    },
}

struct Bar {
    bar: ProgressBar,
}

impl signer::Progress for Bar {
    fn phase(&self, name: &str, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_message(name.to_string());
    }
    fn set(&self, done: u64) {
        self.bar.set_position(done);
    }
}

/// Prints each re-signing done by `--follow`.
struct Shown;

impl signer::Progress for Shown {
    fn phase(&self, _: &str, _: u64) {}
    fn set(&self, _: u64) {}
    fn resigned(&self, zone: &Name, report: &signer::Report, elapsed: Duration) {
        if report.written > 0 {
            eprintln!(
                "resigned {zone}: {} signatures made, {} changes written, serial {}, {:.2} s",
                report.stats.signed,
                report.written,
                report.serial,
                elapsed.as_secs_f64()
            );
        }
    }
}

fn bar(quiet: bool) -> Bar {
    let bar = ProgressBar::new(0);
    if quiet {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg:>8} [{bar:40}] {pos}/{len} {per_sec} {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
    }
    Bar { bar }
}

fn parse_zone(text: &str) -> Result<Name, SignError> {
    let text = if text.ends_with('.') {
        text.to_string()
    } else {
        format!("{text}.")
    };
    text.parse()
        .map_err(|e| SignError::Usage(format!("bad zone name {text}: {e}")))
}

fn parse_alg(text: &str) -> Result<u8, SignError> {
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
    let store = Store::connect(
        &cli.mongodb_uri,
        &cli.database,
        Duration::from_millis(cli.db_timeout_ms),
    )
    .await?;
    store.ensure_dnssec_indexes().await?;
    let threads = cli.threads;
    match cli.command {
        Command::SecureZone {
            zone,
            algorithm,
            nsec3,
            iterations,
            salt,
            opt_out,
            csk,
            cds,
            grace,
        } => {
            let zone = parse_zone(&zone)?;
            let nsec3 = if nsec3 {
                let salt = if salt == "-" {
                    Vec::new()
                } else {
                    from_hex(&salt).ok_or_else(|| {
                        SignError::Usage(format!("salt {salt} is not hex (or - for none)"))
                    })?
                };
                Some(Nsec3Config {
                    iterations,
                    salt,
                    opt_out,
                })
            } else {
                None
            };
            let options = SecureOptions {
                algorithm: parse_alg(&algorithm)?,
                csk,
                nsec3,
                cds,
                validity: Validity::default(),
                threads,
                grace: Duration::from_secs(grace),
            };
            let started = Instant::now();
            let b = bar(cli.quiet);
            let r = signer::secure_zone(&store, &zone, &options, &b).await?;
            b.bar.finish_and_clear();
            let secs = started.elapsed().as_secs_f64();
            eprintln!(
                "secured {zone}: {} nodes, {} signatures, chain of {}, {} documents written, serial {}, {:.2} s ({:.0} signatures/s)",
                r.nodes,
                r.stats.signed,
                r.stats.chain,
                r.written,
                r.serial,
                secs,
                r.stats.signed as f64 / secs.max(1e-9)
            );
            show_zone(&store, &zone).await?;
        }
        Command::Resign {
            zone,
            follow,
            interval,
            full,
        } => {
            let zone = parse_zone(&zone)?;
            let validity = Validity::default();
            let b = bar(cli.quiet || follow);
            let started = Instant::now();
            let r = signer::resign(&store, &zone, full, &validity, threads, &b).await?;
            b.bar.finish_and_clear();
            report_resign(&zone, &r, started);
            if follow {
                let shown = Shown;
                signer::follow(
                    &store,
                    &zone,
                    &validity,
                    threads,
                    Duration::from_secs_f64(interval.max(0.05)),
                    &shown,
                )
                .await?;
            }
        }
        Command::ShowZone { zone } => {
            let zone = parse_zone(&zone)?;
            show_zone(&store, &zone).await?;
        }
        Command::UnsecureZone { zone, keep_keys } => {
            let zone = parse_zone(&zone)?;
            let r = signer::unsecure_zone(&store, &zone, keep_keys, Duration::from_secs(3)).await?;
            eprintln!(
                "unsecured {zone}: {} documents written, serial {}{}",
                r.written,
                r.serial,
                if keep_keys { "" } else { ", keys deleted" }
            );
            eprintln!(
                "remove the DS records for {zone} from the parent zone first, if there are any"
            );
        }
        Command::ExportZone { zone } => {
            let zone = parse_zone(&zone)?;
            let info = store
                .find_zone(&zone)
                .await?
                .ok_or_else(|| backend_mongo::StoreError::NoSuchZone(zone.to_string()))?;
            let nodes = store.read_version(&zone, info.ver).await?;
            let text = master_file(&zone, &nodes);
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .map_err(|e| SignError::Usage(format!("cannot write: {e}")))?;
        }
        Command::AddKey {
            zone,
            ksk,
            active,
            algorithm,
        } => {
            let zone = parse_zone(&zone)?;
            store.dnssec_config(&zone).await?;
            let state = if active {
                KeyState::Active
            } else {
                KeyState::Published
            };
            let key = crypto::generate(
                &zone,
                parse_alg(&algorithm)?,
                if ksk { 257 } else { 256 },
                state,
            )?;
            store.insert_key(&key).await?;
            println!(
                "{}\t{}\ttag {}\t{}",
                key.id,
                key.role(),
                key.tag,
                state.as_str()
            );
            resign_if_secured(&store, &zone, threads).await?;
        }
        Command::RemoveKey { zone, key } => {
            let zone = parse_zone(&zone)?;
            let key = signer::find_key(&store, &zone, &key).await?;
            store.delete_key(&key.id).await?;
            println!("removed {} ({} tag {})", key.id, key.role(), key.tag);
            resign_if_secured(&store, &zone, threads).await?;
        }
        Command::ActivateKey { zone, key } => {
            let zone = parse_zone(&zone)?;
            let key = signer::find_key(&store, &zone, &key).await?;
            store.set_key_state(&key.id, KeyState::Active).await?;
            println!("activated {} ({} tag {})", key.id, key.role(), key.tag);
            resign_if_secured(&store, &zone, threads).await?;
        }
        Command::RetireKey { zone, key } => {
            let zone = parse_zone(&zone)?;
            let key = signer::find_key(&store, &zone, &key).await?;
            store.set_key_state(&key.id, KeyState::Retired).await?;
            println!("retired {} ({} tag {})", key.id, key.role(), key.tag);
            resign_if_secured(&store, &zone, threads).await?;
        }
    }
    Ok(())
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

async fn show_zone(store: &Store, zone: &Name) -> Result<(), SignError> {
    let config = store.dnssec_config(zone).await?;
    let keys = store.zone_keys(zone).await?;
    println!(
        "zone {zone}: {}{}",
        if config.secured {
            "secured"
        } else {
            "not secured"
        },
        match &config.nsec3 {
            Some(n) => format!(
                ", NSEC3 iterations {} salt {}{}",
                n.iterations,
                if n.salt.is_empty() {
                    "-".to_string()
                } else {
                    backend_mongo::dnssec::to_hex(&n.salt)
                },
                if n.opt_out { " opt-out" } else { "" }
            ),
            None if config.secured => ", NSEC".to_string(),
            None => String::new(),
        }
    );
    if keys.is_empty() {
        println!("no keys");
        return Ok(());
    }
    println!("keys:");
    for k in &keys {
        println!(
            "  {}  {}  tag {:5}  {} ({})  {}  created {}",
            k.id,
            k.role(),
            k.tag,
            crypto::algorithm_name(k.algorithm),
            k.algorithm,
            k.state.as_str(),
            k.created.try_to_rfc3339_string().unwrap_or_default()
        );
    }
    println!("DNSKEY:");
    for k in &keys {
        println!(
            "{zone} IN DNSKEY {}",
            rdata_text(RType::DNSKEY, &k.dnskey_rdata())
        );
    }
    println!("DS (SHA-256), for the parent zone:");
    for k in keys.iter().filter(|k| k.is_ksk()) {
        let ds = ds_rdata(zone, &k.dnskey_rdata(), k.algorithm);
        println!("{zone} IN DS {}", rdata_text(RType::DS, &ds));
    }
    Ok(())
}
