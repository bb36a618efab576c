//! `mongodns-zonegen`: deterministic synthetic zones and dnsperf query files —
//! the zonegen job of `loadtools` (`loadtools::zonegen`).
//!
//! ```text
//!  big     ─► one zone of N records (streamed)
//!  small   ─► M small zones: one multi-zone file, or a directory of files
//!  queries ─► dnsperf lines: first K / last K / hot H / random names + a mix
//!  caches  ─► the caches benchmark set (100k names, 200k queries, 736 hot)
//! ```

use clap::{Parser, Subcommand};
use loadtools::zonegen::{self, BigZone, Mix, Selection, SmallZones};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Generate synthetic zones and query files, deterministically from a seed.
#[derive(Parser, Debug)]
#[command(
    name = "mongodns-zonegen",
    version,
    after_help = "Output is deterministic for a given --seed: the same command always writes \
the same zone and query files.\n\n\
EXAMPLES:\n    mongodns-zonegen caches --dir /tmp/bench     # the caches benchmark set\n\n\
SEE ALSO:\n    mongodns-import, mongodns-perf, docs/benchmarks.md"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug, Clone)]
struct BigArgs {
    /// The zone's apex.
    #[arg(long, default_value = "example.com.")]
    zone: String,
    /// Records in the zone (apex records included).
    #[arg(long, short = 'n')]
    records: u64,
    /// The seed: the same seed always gives the same bytes.
    #[arg(long, default_value_t = 2011)]
    seed: u64,
    /// Text put before every generated label (for an update stream).
    #[arg(long, default_value = "")]
    prefix: String,
    /// Leave out SOA, NS and the special names (a file to merge into an
    /// existing zone); N then counts generated records only.
    #[arg(long)]
    bare: bool,
}

impl BigArgs {
    fn zone(&self) -> BigZone {
        let mut z = BigZone::new(&self.zone, self.seed, self.records);
        z.prefix = self.prefix.clone();
        z.bare = self.bare;
        z
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One big zone as a master file.
    Big {
        #[command(flatten)]
        zone: BigArgs,
        /// Output file (`-` for stdout).
        #[arg(long, short = 'o', default_value = "-")]
        out: String,
    },
    /// Many small zones (7 records each).
    Small {
        /// How many zones.
        #[arg(long, short = 'm')]
        zones: u64,
        /// Parent domain of every zone.
        #[arg(long, default_value = "test.")]
        suffix: String,
        /// The seed.
        #[arg(long, default_value_t = 2011)]
        seed: u64,
        /// One multi-zone file (`$ZONE <apex>` before each zone; `-` for stdout).
        #[arg(long, short = 'o', conflicts_with = "dir")]
        out: Option<String>,
        /// A directory of files named `<apex>zone` (e.g. `kotami0.test.zone`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// A dnsperf query file (`name TYPE` per line) for a big zone.
    Queries {
        #[command(flatten)]
        zone: BigArgs,
        /// Ask the first K generated names, in order.
        #[arg(long, conflicts_with_all = ["last", "random"])]
        first: Option<u64>,
        /// Ask the last K generated names, in order.
        #[arg(long, conflicts_with = "random")]
        last: Option<u64>,
        /// Draw names at random from the whole zone.
        #[arg(long)]
        random: bool,
        /// Lines to write (default: K for --first/--last, else 100,000).
        #[arg(long)]
        count: Option<u64>,
        /// Percent of AAAA queries (names that have one).
        #[arg(long, default_value_t = 0)]
        aaaa: u32,
        /// Percent of NXDOMAIN queries.
        #[arg(long, default_value_t = 0)]
        nxdomain: u32,
        /// Percent of NODATA queries (MX of an existing name).
        #[arg(long, default_value_t = 0)]
        nodata: u32,
        /// Percent of wildcard queries.
        #[arg(long, default_value_t = 0)]
        wildcard: u32,
        /// Output file (`-` for stdout).
        #[arg(long, short = 'o', default_value = "-")]
        out: String,
    },
    /// The caches benchmark set: caches.zone, caches-queries.txt, caches-hot.txt.
    Caches {
        /// Directory to write into.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The zone's apex.
        #[arg(long, default_value = "example.com.")]
        zone: String,
        /// Generated names in the zone.
        #[arg(long, default_value_t = 100_000)]
        names: u64,
        /// The seed.
        #[arg(long, default_value_t = 2011)]
        seed: u64,
    },
}

fn output(out: &str) -> std::io::Result<Box<dyn Write>> {
    Ok(if out == "-" {
        Box::new(BufWriter::with_capacity(1 << 20, std::io::stdout().lock()))
    } else {
        Box::new(BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(out)?,
        ))
    })
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("mongodns-zonegen: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> std::io::Result<()> {
    match args.command {
        Command::Big { zone, out } => {
            let mut w = output(&out)?;
            let n = zone.zone().write(&mut w)?;
            w.flush()?;
            eprintln!("wrote {n} records of {}", zone.zone().apex);
        }
        Command::Small {
            zones,
            suffix,
            seed,
            out,
            dir,
        } => {
            let s = SmallZones::new(seed, zones, &suffix);
            let n = match (out, dir) {
                (_, Some(dir)) => s.write_dir(&dir)?,
                (out, None) => {
                    let mut w = output(out.as_deref().unwrap_or("-"))?;
                    let n = s.write_multi(&mut w)?;
                    w.flush()?;
                    n
                }
            };
            eprintln!("wrote {zones} zones, {n} records");
        }
        Command::Queries {
            zone,
            first,
            last,
            random,
            count,
            aaaa,
            nxdomain,
            nodata,
            wildcard,
            out,
        } => {
            if aaaa + nxdomain + nodata + wildcard > 100 {
                return Err(std::io::Error::other("the mix adds up to more than 100%"));
            }
            let (selection, default_count) = match (first, last, random) {
                (Some(k), _, _) => (Selection::First(k), k),
                (_, Some(k), _) => (Selection::Last(k), k),
                _ => (Selection::Random, 100_000),
            };
            let mix = Mix {
                aaaa,
                nxdomain,
                nodata,
                wildcard,
            };
            let mut w = output(&out)?;
            let n = zonegen::write_queries(
                &zone.zone(),
                selection,
                count.unwrap_or(default_count),
                mix,
                &mut w,
            )?;
            w.flush()?;
            eprintln!("wrote {n} queries");
        }
        Command::Caches {
            dir,
            zone,
            names,
            seed,
        } => {
            let paths = zonegen::write_caches_set(&dir, &zone, seed, names)?;
            for p in paths {
                eprintln!("wrote {}", p.display());
            }
        }
    }
    Ok(())
}
