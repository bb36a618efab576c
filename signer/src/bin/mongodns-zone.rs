//! `mongodns-zone`: zone and record administration for zones stored in
//! MongoDB, in the spirit of `pdnsutil` and `knotc`.
//!
//! ```text
//!  list-zones / show-zone          reads (paged; records as a master file)
//!  create-zone                     a new zone: SOA and NS, one replace write
//!  delete-zone                     a tombstone (servers stop), then the records
//!  check-zone                      signer::check (kzonecheck's checks) on the stored zone
//!  add-record / delete-record / delete-rrset / delete-name / replace-rrset
//!  increase-serial                 one change-set each: signer::edit::edit_zone
//!                                  (RFC 2136's rules; signed when secured)
//!  sync-catalog [--follow S]      signer::catalog::sync: a catalog zone
//!                                  (RFC 9432) listing every served zone
//!  set-notify                      the zone's settings document: its secondaries
//!  exit status: 0 done, 1 refused or failed, 2 bad input
//! ```

use backend_mongo::{NodeWrite, Store};
use clap::{Parser, Subcommand};
use dns::edit::{Edited, RecordEdit};
use dns::presentation::parse_rdata;
use dns::serial::{set_soa_serial, soa_serial};
use dns::{Name, RRset, RType};
use signer::create::{today_serial, NewZone};
use signer::export::master_file;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "mongodns-zone",
    version,
    about = "Zones and records stored in MongoDB"
)]
struct Cli {
    #[command(flatten)]
    database: signer::DatabaseArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Served zones in name order, with serial and version (and, with
    /// --counts, the number of names: a count of the zone's documents).
    ListZones(ListArgs),
    /// The zone's records as a master file (DNSSEC records with --dnssec).
    ShowZone(ShowArgs),
    /// A new zone holding an SOA and NS records.
    CreateZone(CreateArgs),
    /// Add records to an RRset (created if absent; its TTL becomes --ttl).
    AddRecord(RecordsArgs),
    /// Delete these records from an RRset.
    DeleteRecord(RecordsArgs),
    /// Make an RRset exactly these records.
    ReplaceRrset(RecordsArgs),
    /// Delete a whole RRset.
    DeleteRrset(RRsetArgs),
    /// Delete every RRset of a name.
    DeleteName(NameArgs),
    /// Move the SOA serial forward by one.
    IncreaseSerial(ZoneArg),
    /// Stop serving a zone and delete it: records, versions and keys.
    DeleteZone(DeleteArgs),
    /// Check the zone as stored (what kzonecheck checks): exit 1 on errors.
    CheckZone(ZoneArg),
    /// Make a catalog zone (RFC 9432, version 2) list every served zone:
    /// created if missing, members added and removed.
    SyncCatalog(CatalogArgs),
    /// Where servers send NOTIFY for the zone (its settings document):
    /// replaces the servers' --notify list for it; no address: nobody.
    SetNotify(NotifyArgs),
}

#[derive(clap::Args)]
struct CatalogArgs {
    /// The catalog zone, e.g. catalog.invalid.
    catalog: String,
    /// Sync again every this many seconds, until stopped.
    #[arg(long)]
    follow: Option<u64>,
}

#[derive(clap::Args)]
struct NotifyArgs {
    /// The zone.
    zone: String,
    /// Secondaries, each `ADDR[:PORT][,key=NAME]` (port 53; NAME one of
    /// the servers' TSIG keys).
    targets: Vec<String>,
    /// Drop the zone's own list: the servers' --notify list applies again.
    #[arg(long, conflicts_with = "targets")]
    defaults: bool,
}

#[derive(clap::Args)]
struct DeleteArgs {
    /// The zone.
    zone: String,
    /// Seconds its records stay readable for servers finishing what they
    /// read, before they are deleted.
    #[arg(long, default_value_t = 3)]
    grace: u64,
}

#[derive(clap::Args)]
struct ZoneArg {
    /// The zone.
    zone: String,
}

#[derive(clap::Args)]
struct ListArgs {
    /// Only zones after this one (the last of the previous page).
    #[arg(long)]
    after: Option<String>,
    /// Zones per page.
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Count each zone's names too (reads the whole zone on FerretDB).
    #[arg(long)]
    counts: bool,
}

#[derive(clap::Args)]
struct ShowArgs {
    /// The zone.
    zone: String,
    /// Print the DNSSEC records too (RRSIG, NSEC, NSEC3, DNSKEY, …).
    #[arg(long)]
    dnssec: bool,
}

#[derive(clap::Args)]
struct CreateArgs {
    /// The zone.
    zone: String,
    /// Name servers (relative to the zone, or absolute with a final dot).
    #[arg(long = "ns", required = true)]
    ns: Vec<String>,
    /// The SOA's responsible mailbox, as a name.
    #[arg(long, default_value = "hostmaster")]
    rname: String,
    /// TTL of the SOA and NS records.
    #[arg(long, default_value_t = 3600)]
    ttl: u32,
    /// The first serial (default: today as YYYYMMDD01).
    #[arg(long)]
    serial: Option<u32>,
}

#[derive(clap::Args)]
struct RecordsArgs {
    /// The zone.
    zone: String,
    /// Owner name: relative to the zone, absolute with a final dot, or @.
    name: String,
    /// Record type (A, MX, TXT, TYPE65280, …).
    rtype: String,
    /// Each record's data in presentation format (one argument each:
    /// quote it, e.g. "10 mail" or '"v=spf1 -all"').
    #[arg(required = true)]
    content: Vec<String>,
    /// TTL of the RRset.
    #[arg(long, default_value_t = 3600)]
    ttl: u32,
}

#[derive(clap::Args)]
struct RRsetArgs {
    /// The zone.
    zone: String,
    /// Owner name.
    name: String,
    /// Record type.
    rtype: String,
}

#[derive(clap::Args)]
struct NameArgs {
    /// The zone.
    zone: String,
    /// Owner name.
    name: String,
}

/// Why a command did not do what it was asked.
enum Failure {
    /// The arguments are wrong (exit status 2).
    Usage(String),
    /// Refused, or the database failed (exit status 1).
    Failed(String),
}

impl<E: std::fmt::Display> From<E> for Failure
where
    E: Into<Box<dyn std::error::Error>>,
{
    fn from(e: E) -> Failure {
        Failure::Failed(e.to_string())
    }
}

fn usage(text: String) -> Failure {
    Failure::Usage(text)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("mongodns-zone: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(e)) => {
            eprintln!("mongodns-zone: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Failure> {
    // Arguments are checked before the database is reached.
    let job = Job::from_command(cli.command)?;
    let store = cli.database.connect().await?;
    let result = job.run(&store).await;
    store.shutdown().await;
    result
}

/// A command with its arguments checked and parsed.
enum Job {
    List(ListArgs, Option<Name>),
    Show(Name, bool),
    Create(Name, Vec<NodeWrite>),
    Edit(Name, Vec<RecordEdit>),
    IncreaseSerial(Name),
    Delete(Name, Duration),
    Check(Name),
    SyncCatalog(Name, Option<Duration>),
    SetNotify(Name, Option<Vec<String>>),
}

impl Job {
    fn from_command(command: Command) -> Result<Job, Failure> {
        Ok(match command {
            Command::ListZones(a) => {
                let after = a.after.as_deref().map(parse_zone).transpose()?;
                Job::List(a, after)
            }
            Command::ShowZone(a) => Job::Show(parse_zone(&a.zone)?, a.dnssec),
            Command::CreateZone(a) => {
                let zone = parse_zone(&a.zone)?;
                let apex = create_zone_apex(&zone, &a)?;
                Job::Create(zone, vec![apex])
            }
            Command::AddRecord(a) => {
                records_edit(a, |name, rrset| RecordEdit::Add { name, rrset })?
            }
            Command::ReplaceRrset(a) => {
                records_edit(a, |name, rrset| RecordEdit::ReplaceRRset { name, rrset })?
            }
            Command::DeleteRecord(a) => records_edit(a, |name, rrset| RecordEdit::DeleteRecords {
                name,
                rtype: rrset.rtype,
                rdata: rrset.rdata,
            })?,
            Command::DeleteRrset(a) => {
                let zone = parse_zone(&a.zone)?;
                let name = parse_owner(&a.name, &zone)?;
                let rtype = parse_type(&a.rtype)?;
                Job::Edit(zone, vec![RecordEdit::DeleteRRset { name, rtype }])
            }
            Command::DeleteName(a) => {
                let zone = parse_zone(&a.zone)?;
                let name = parse_owner(&a.name, &zone)?;
                Job::Edit(zone, vec![RecordEdit::DeleteName { name }])
            }
            Command::IncreaseSerial(a) => Job::IncreaseSerial(parse_zone(&a.zone)?),
            Command::DeleteZone(a) => {
                Job::Delete(parse_zone(&a.zone)?, Duration::from_secs(a.grace))
            }
            Command::CheckZone(a) => Job::Check(parse_zone(&a.zone)?),
            Command::SyncCatalog(a) => {
                let every = a.follow.map(|s| Duration::from_secs(s.max(1)));
                Job::SyncCatalog(parse_zone(&a.catalog)?, every)
            }
            Command::SetNotify(a) => {
                a.targets.iter().try_for_each(|t| check_notify_target(t))?;
                let targets = (!a.defaults).then_some(a.targets);
                Job::SetNotify(parse_zone(&a.zone)?, targets)
            }
        })
    }

    async fn run(self, store: &Store) -> Result<(), Failure> {
        match self {
            Job::List(a, after) => list_zones(store, &a, after).await,
            Job::Show(zone, dnssec) => show_zone(store, &zone, dnssec).await,
            Job::Create(zone, nodes) => create_zone(store, &zone, &nodes).await,
            Job::Edit(zone, edits) => edit(store, &zone, &edits).await,
            Job::IncreaseSerial(zone) => increase_serial(store, &zone).await,
            Job::Delete(zone, grace) => delete_zone(store, &zone, grace).await,
            Job::Check(zone) => check_zone(store, &zone).await,
            Job::SyncCatalog(catalog, every) => sync_catalog(store, &catalog, every).await,
            Job::SetNotify(zone, targets) => set_notify(store, &zone, targets).await,
        }
    }
}

fn parse_zone(text: &str) -> Result<Name, Failure> {
    let absolute = if text.ends_with('.') {
        text.to_string()
    } else {
        format!("{text}.")
    };
    Name::parse(&absolute, None).map_err(|e| usage(format!("bad zone name {text:?}: {e}")))
}

/// An owner name: `@`, relative to the zone, or absolute; inside the zone.
fn parse_owner(text: &str, zone: &Name) -> Result<Name, Failure> {
    let name = match text {
        "@" => zone.clone(),
        _ => Name::parse(text, Some(zone)).map_err(|e| usage(format!("bad name {text:?}: {e}")))?,
    };
    if !name.is_subdomain_of(zone) {
        return Err(usage(format!("{name} is not in zone {zone}")));
    }
    Ok(name)
}

fn parse_type(text: &str) -> Result<RType, Failure> {
    RType::from_mnemonic(&text.to_ascii_uppercase())
        .filter(|t| !t.is_meta())
        .ok_or_else(|| usage(format!("unknown record type {text:?}")))
}

/// The RRset the arguments give, each content parsed as rdata of the type.
fn parse_rrset(a: &RecordsArgs, zone: &Name) -> Result<(Name, RRset), Failure> {
    let name = parse_owner(&a.name, zone)?;
    let rtype = parse_type(&a.rtype)?;
    let mut rdata = Vec::with_capacity(a.content.len());
    for c in &a.content {
        let rd = parse_rdata(rtype, c, zone).map_err(|e| {
            usage(format!(
                "bad {} data {c:?}: {e}",
                a.rtype.to_ascii_uppercase()
            ))
        })?;
        rdata.push(rd.into_boxed_slice());
    }
    Ok((
        name,
        RRset {
            rtype,
            ttl: a.ttl,
            rdata,
        },
    ))
}

fn records_edit(a: RecordsArgs, make: impl Fn(Name, RRset) -> RecordEdit) -> Result<Job, Failure> {
    let zone = parse_zone(&a.zone)?;
    let (name, rrset) = parse_rrset(&a, &zone)?;
    Ok(Job::Edit(zone, vec![make(name, rrset)]))
}

/// The apex of a new zone: its SOA and NS records.
fn create_zone_apex(zone: &Name, a: &CreateArgs) -> Result<NodeWrite, Failure> {
    let mut nameservers = Vec::new();
    for text in &a.ns {
        nameservers.push(
            Name::parse(text, Some(zone)).map_err(|e| usage(format!("bad --ns {text:?}: {e}")))?,
        );
    }
    let rname = Name::parse(&a.rname, Some(zone))
        .map_err(|e| usage(format!("bad --rname {:?}: {e}", a.rname)))?;
    let new = NewZone {
        apex: zone.clone(),
        nameservers,
        rname,
        ttl: a.ttl,
        serial: a.serial.unwrap_or_else(today_serial),
    };
    new.apex_node().map_err(|e| usage(e.to_string()))
}

async fn list_zones(store: &Store, a: &ListArgs, after: Option<Name>) -> Result<(), Failure> {
    let zones = store.list_zones(after.as_ref(), a.limit).await?;
    for z in &zones {
        match a.counts {
            true => println!(
                "{}\tserial {}\tversion {}\t{} names",
                z.apex,
                z.serial,
                z.ver,
                store.count_names(z).await?
            ),
            false => println!("{}\tserial {}\tversion {}", z.apex, z.serial, z.ver),
        }
    }
    if zones.len() == a.limit {
        if let Some(last) = zones.last() {
            eprintln!("more zones follow: --after {}", last.apex);
        }
    }
    Ok(())
}

async fn show_zone(store: &Store, zone: &Name, dnssec: bool) -> Result<(), Failure> {
    let served = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| Failure::Failed(format!("zone {zone} does not exist")))?;
    let mut nodes = store.read_version(zone, served.ver).await?;
    if !dnssec {
        nodes.retain(|n| !n.nsec3);
        for n in &mut nodes {
            n.rrsets.retain(|r| !r.rrset.rtype.is_signer_owned());
            for r in &mut n.rrsets {
                r.sigs.clear();
            }
        }
    }
    print!("{}", master_file(zone, &nodes));
    Ok(())
}

async fn create_zone(store: &Store, zone: &Name, nodes: &[NodeWrite]) -> Result<(), Failure> {
    let served = signer::create::create_zone(store, zone, nodes).await?;
    println!("created {zone}: serial {}", served.serial);
    Ok(())
}

/// Applies one change-set and says what each edit did; an edit that RFC
/// 2136's rules left out makes the exit status 1.
async fn edit(store: &Store, zone: &Name, edits: &[RecordEdit]) -> Result<(), Failure> {
    let summary = signer::edit::edit_zone(store, zone, edits).await?;
    let mut refused = Vec::new();
    for (e, outcome) in edits.iter().zip(&summary.outcomes) {
        match outcome {
            Edited::Changed => println!("{}: changed", e.name()),
            Edited::Unchanged => println!("{}: nothing to change", e.name()),
            Edited::Ignored(why) => refused.push(format!("{}: not changed: {why}", e.name())),
        }
    }
    if summary.gen.is_some() {
        println!("zone {zone}: serial {}", summary.serial);
    }
    match refused.is_empty() {
        true => Ok(()),
        false => Err(Failure::Failed(refused.join("; "))),
    }
}

/// `ADDR[:PORT]` then only `key=NAME` parts (servers check the key).
fn check_notify_target(text: &str) -> Result<(), Failure> {
    let mut parts = text.split(',');
    let addr = parts.next().unwrap_or_default();
    let addr_ok =
        addr.parse::<std::net::SocketAddr>().is_ok() || addr.parse::<std::net::IpAddr>().is_ok();
    match addr_ok && parts.all(|p| p.starts_with("key=")) {
        true => Ok(()),
        false => Err(usage(format!("{text:?} is not ADDR[:PORT][,key=NAME]"))),
    }
}

async fn set_notify(
    store: &Store,
    zone: &Name,
    targets: Option<Vec<String>>,
) -> Result<(), Failure> {
    let gen = store.set_zone_notify(zone, targets.as_deref()).await?;
    match targets {
        Some(t) if t.is_empty() => {
            println!("zone {zone}: NOTIFY goes to nobody (generation {gen})")
        }
        Some(t) => println!(
            "zone {zone}: NOTIFY goes to {} (generation {gen})",
            t.join(" ")
        ),
        None => {
            println!("zone {zone}: NOTIFY goes to the servers' --notify list (generation {gen})")
        }
    }
    Ok(())
}

async fn increase_serial(store: &Store, zone: &Name) -> Result<(), Failure> {
    let served = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| Failure::Failed(format!("zone {zone} does not exist")))?;
    let apex = store.get_node(&served, zone).await?;
    let soa = apex
        .as_ref()
        .and_then(|n| n.rrset(RType::SOA))
        .ok_or_else(|| Failure::Failed(format!("zone {zone} has no SOA")))?;
    let mut rd = soa.rdata[0].to_vec();
    let serial = soa_serial(&rd).unwrap_or(served.serial);
    set_soa_serial(&mut rd, serial.wrapping_add(1));
    let edits = [RecordEdit::Add {
        name: zone.clone(),
        rrset: RRset {
            rtype: RType::SOA,
            ttl: soa.ttl,
            rdata: vec![rd.into_boxed_slice()],
        },
    }];
    edit(store, zone, &edits).await
}

async fn delete_zone(store: &Store, zone: &Name, grace: Duration) -> Result<(), Failure> {
    let deleted = match store.delete_zone(zone).await {
        Err(backend_mongo::StoreError::NoSuchZone(_)) => {
            return Err(Failure::Failed(format!("zone {zone} does not exist")))
        }
        r => r?,
    };
    println!(
        "zone {zone}: no longer served (generation {}); {} keys deleted",
        deleted.gen, deleted.keys
    );
    let collected = store.collect_old_versions(zone, grace, &|_| {}).await?;
    println!("zone {zone}: {} records deleted", collected.deleted);
    Ok(())
}

async fn check_zone(store: &Store, zone: &Name) -> Result<(), Failure> {
    let served = store
        .find_zone(zone)
        .await?
        .ok_or_else(|| Failure::Failed(format!("zone {zone} does not exist")))?;
    let nodes = store.read_version(zone, served.ver).await?;
    let findings = signer::check::check_zone(zone, &nodes);
    for f in &findings {
        println!("{f}");
    }
    let errors = findings
        .iter()
        .filter(|f| f.severity == signer::check::Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    println!(
        "zone {zone}: {} names checked, {errors} errors, {warnings} warnings",
        nodes.len()
    );
    match errors {
        0 => Ok(()),
        n => Err(Failure::Failed(format!("zone {zone}: {n} errors"))),
    }
}

/// Syncs the catalog once, or every `every` until killed.
async fn sync_catalog(
    store: &Store,
    catalog: &Name,
    every: Option<Duration>,
) -> Result<(), Failure> {
    loop {
        let done = signer::catalog::sync(store, catalog).await?;
        if done.created {
            println!("{catalog}: catalog created");
        }
        if done.added + done.removed > 0 || every.is_none() {
            let serial = done
                .serial
                .map_or("unchanged".to_string(), |s| s.to_string());
            println!(
                "{catalog}: {} members added, {} removed, serial {serial}",
                done.added, done.removed
            );
        }
        match every {
            Some(pause) => tokio::time::sleep(pause).await,
            None => return Ok(()),
        }
    }
}
