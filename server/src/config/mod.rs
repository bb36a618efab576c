//! Configuration: one list of options, read from flags, environment
//! variables and a TOML file.
//!
//! ```text
//!  precedence, highest first:  --flag  >  MONGODNS_* env  >  --config FILE  >  default
//!  every option has the same name everywhere: --query-log-sample (flag),
//!  MONGODNS_QUERY_LOG_SAMPLE (env), query_log_sample (file key)
//!  resolve() ─► Resolved { config, sources } ─► validate() ─► main / --check-config
//! ```
//!
//! The options are declared once, in the `options!` invocation below; the
//! macro writes the clap flags, the file's schema (unknown keys are errors),
//! the effective `Config` and the merge that applies the precedence.
//! `validate.rs` checks a `Config`; `render.rs` prints one (secrets
//! redacted) and says which changes need a restart.

use crate::cidr::Cidr;
use crate::frontend::spread::UdpSpread;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod render;
mod validate;

pub use render::RELOADABLE;

/// Where an option's effective value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// The `--config` file.
    File,
    /// An environment variable.
    Env,
    /// A command-line flag.
    Flag,
}

impl Source {
    fn label(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File => "file",
            Source::Env => "env",
            Source::Flag => "flag",
        }
    }
}

/// Log line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Line format for the syslog query-log output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SyslogFormat {
    /// BSD syslog: `<PRI>Mmm dd hh:mm:ss TAG[PID]: MSG`.
    Rfc3164,
    /// `<PRI>1 TIMESTAMP HOST APP PID MSGID - MSG`.
    Rfc5424,
}

/// MongoDB read preferences, spelled as in connection strings.
pub const READ_PREFERENCES: [&str; 5] = [
    "primary",
    "primaryPreferred",
    "secondary",
    "secondaryPreferred",
    "nearest",
];

const ABOUT: &str = "Authoritative DNS server serving zones stored in MongoDB.";

const LONG_ABOUT: &str = "\
Authoritative DNS server serving zones stored in MongoDB.

mongodns-server answers DNS queries over UDP and TCP for every zone stored in
the MongoDB database it is pointed at. Answers come from a packet cache and a
record cache in front of the database; writes by mongodns-import or
mongodns-sign are seen within --freshness-ms.

Every option can be given three ways, with the same name: a flag
(--query-log-sample 10), an environment variable (MONGODNS_QUERY_LOG_SAMPLE=10)
and a key in the TOML file named by --config (query_log_sample = 10). A flag
beats the environment, which beats the file, which beats the built-in default.
--check-config prints the effective configuration, with where each value came
from, and exits.";

const AFTER_HELP: &str = "\
SIGNALS:
    SIGHUP     re-read the --config file and apply what can change while
               serving: log, query_log_sample, cache_max_ttl,
               cache_negative_ttl; reopen the query log (for logrotate);
               other changed options are reported as needing a restart
    SIGTERM    stop accepting queries, finish those in flight (at most
               --shutdown-grace-ms), flush the query log, exit 0
    SIGINT     the same as SIGTERM

EXIT STATUS:
    0  clean shutdown, or --check-config found the configuration valid
    2  bad configuration, database unreachable or too old, cannot bind

FILES:
    mongodns.toml   example configuration, every option commented
    docs/operations.md   configure, start, observe, stop

EXAMPLES:
    mongodns-server --config /etc/mongodns/mongodns.toml --check-config
    mongodns-server --listen 0.0.0.0:53,[::]:53 --control-listen 127.0.0.1:8053
    MONGODNS_QUERY_LOG=/var/log/mongodns/queries.log mongodns-server";

/// Parses a boolean the way people write them (1/0, yes/no, true/false).
fn boolish() -> clap::builder::BoolishValueParser {
    clap::builder::BoolishValueParser::new()
}

macro_rules! options {
    (
        with_default {
            $(
                $(#[doc = $doc:literal])*
                $name:ident : $ty:ty = $default:expr, [$($clap:tt)*];
            )*
        }
        optional {
            $(
                $(#[doc = $odoc:literal])*
                $oname:ident : $oty:ty, [$($oclap:tt)*];
            )*
        }
    ) => {
        /// Command-line flags (each also read from its environment variable).
        #[derive(clap::Parser, Debug, Clone)]
        #[command(
            name = "mongodns-server",
            version,
            about = ABOUT,
            long_about = LONG_ABOUT,
            after_help = AFTER_HELP
        )]
        pub struct Args {
            /// TOML configuration file; flags and environment variables override it.
            #[arg(long, env = "MONGODNS_CONFIG", value_name = "FILE")]
            pub config: Option<PathBuf>,
            /// Validate the configuration, print the effective values and where
            /// each came from, and exit (0 if valid, 2 if not). Does not connect
            /// to the database.
            #[arg(long)]
            pub check_config: bool,
            $(
                $(#[doc = $doc])*
                #[arg(long, $($clap)*)]
                pub $name: Option<$ty>,
            )*
            $(
                $(#[doc = $odoc])*
                #[arg(long, $($oclap)*)]
                pub $oname: Option<$oty>,
            )*
        }

        /// The file's schema: every key optional, unknown keys rejected.
        #[derive(Deserialize, Default, Debug)]
        #[serde(deny_unknown_fields)]
        struct FileConfig {
            $( $name: Option<$ty>, )*
            $( $oname: Option<$oty>, )*
        }

        /// The effective configuration.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        pub struct Config {
            $( $(#[doc = $doc])* pub $name: $ty, )*
            $( $(#[doc = $odoc])* pub $oname: Option<$oty>, )*
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $( $name: $default, )*
                    $( $oname: None, )*
                }
            }
        }

        /// Every option's name, in declaration order.
        pub const OPTION_NAMES: &[&str] = &[$(stringify!($name),)* $(stringify!($oname),)*];

        fn merge(args: &Args, cli: &BTreeMap<String, Source>, file: FileConfig) -> Resolved {
            let defaults = Config::default();
            let mut sources = BTreeMap::new();
            let cli_source = |name: &str| cli.get(name).copied().unwrap_or(Source::Flag);
            $(
                let $name = if let Some(v) = args.$name.clone() {
                    sources.insert(stringify!($name), cli_source(stringify!($name)));
                    v
                } else if let Some(v) = file.$name {
                    sources.insert(stringify!($name), Source::File);
                    v
                } else {
                    sources.insert(stringify!($name), Source::Default);
                    defaults.$name
                };
            )*
            $(
                let $oname = if let Some(v) = args.$oname.clone() {
                    sources.insert(stringify!($oname), cli_source(stringify!($oname)));
                    Some(v)
                } else if let Some(v) = file.$oname {
                    sources.insert(stringify!($oname), Source::File);
                    Some(v)
                } else {
                    sources.insert(stringify!($oname), Source::Default);
                    None
                };
            )*
            Resolved {
                config: Config { $($name,)* $($oname,)* },
                sources,
                file: args.config.clone(),
            }
        }

        impl Config {
            /// `name = value` lines (TOML), unset options commented out.
            fn lines(&self) -> Vec<(&'static str, String)> {
                vec![
                    $( (stringify!($name), toml_value(&self.$name)), )*
                    $(
                        (
                            stringify!($oname),
                            self.$oname.as_ref().map_or_else(String::new, toml_value),
                        ),
                    )*
                ]
            }
        }
    };
}

fn toml_value<T: Serialize>(value: &T) -> String {
    toml::Value::try_from(value).map_or_else(|e| format!("\"<{e}>\""), |v| v.to_string())
}

options! {
    with_default {
        /// Address to serve DNS on, UDP and TCP (repeat or comma-separate for
        /// several; IPv6 as [::]:53).
        listen: Vec<SocketAddr> = vec![SocketAddr::from(([127, 0, 0, 1], 5300))],
            [env = "MONGODNS_LISTEN", value_delimiter = ',', value_name = "ADDR"];
        /// UDP sockets per address (SO_REUSEPORT) and runtime threads; 0 means
        /// one per core.
        workers: usize = 0, [env = "MONGODNS_WORKERS", value_name = "N"];
        /// Largest UDP reply, also advertised in OPT.
        max_udp_size: u16 = 1232, [env = "MONGODNS_MAX_UDP_SIZE", value_name = "BYTES"];
        /// Milliseconds allowed for an uncached answer before SERVFAIL.
        query_timeout_ms: u64 = 2000, [env = "MONGODNS_QUERY_TIMEOUT_MS", value_name = "MS"];
        /// TCP connections served at once.
        tcp_max_connections: usize = 256, [env = "MONGODNS_TCP_MAX_CONNECTIONS", value_name = "N"];
        /// Seconds before an idle TCP connection is closed.
        tcp_idle_timeout: u64 = 10, [env = "MONGODNS_TCP_IDLE_TIMEOUT", value_name = "SECONDS"];
        /// Clients allowed to transfer zones (AXFR/IXFR over TCP) without
        /// TSIG, as addresses or networks (192.0.2.0/24, 2001:db8::/32).
        /// Default: nobody (as NSD and Knot), e.g. 127.0.0.1/32 for local tools.
        axfr_allow: Vec<String> = Vec::new(),
            [env = "MONGODNS_AXFR_ALLOW", value_delimiter = ',', value_name = "NET"];
        /// Zone transfers running at once, server-wide; each holds one
        /// database cursor of its own (never a query-path slot). More get REFUSED.
        axfr_max_concurrent: usize = 4,
            [env = "MONGODNS_AXFR_MAX_CONCURRENT", value_name = "N"];
        /// Queries answered on one TCP connection before it is closed (0: no limit).
        tcp_max_queries: usize = 0, [env = "MONGODNS_TCP_MAX_QUERIES", value_name = "N"];
        /// Milliseconds to read one whole TCP query once its first byte came,
        /// and to write one reply message; a slower client is cut.
        tcp_io_timeout_ms: u64 = 2000, [env = "MONGODNS_TCP_IO_TIMEOUT_MS", value_name = "MS"];
        /// Seconds after which no more queries are read from a TCP connection.
        tcp_max_lifetime: u64 = 120, [env = "MONGODNS_TCP_MAX_LIFETIME", value_name = "SECONDS"];
        /// Milliseconds an accepted TCP connection may wait for a free slot
        /// before it is closed.
        tcp_permit_timeout_ms: u64 = 2000,
            [env = "MONGODNS_TCP_PERMIT_TIMEOUT_MS", value_name = "MS"];
        /// TCP connections one source prefix (IPv4 /24, IPv6 /56) may hold at
        /// once (0: no cap).
        tcp_max_per_prefix: usize = 64, [env = "MONGODNS_TCP_MAX_PER_PREFIX", value_name = "N"];
        /// KiB of replies answered but not yet read by one TCP client; past
        /// this the connection is cut (pipelining without reading).
        tcp_max_pending_kb: usize = 256, [env = "MONGODNS_TCP_MAX_PENDING_KB", value_name = "KIB"];
        /// Serve-stale (RFC 8767): seconds after expiry during which a cached
        /// reply or record may still be served, with TTL 30, when the database
        /// fails or times out. 0: off.
        serve_stale_secs: u64 = 0, [env = "MONGODNS_SERVE_STALE_SECS", value_name = "SECONDS"];
        /// Response rate limit: UDP replies per second per source prefix
        /// (0: off). See docs/reliability.md.
        rrl_rate: u32 = 0, [env = "MONGODNS_RRL_RATE", value_name = "N"];
        /// Of the replies over the rate, send every n-th as a truncated (TC)
        /// reply and drop the rest; 0 drops them all.
        rrl_slip: u32 = 2, [env = "MONGODNS_RRL_SLIP", value_name = "N"];
        /// Prefix length grouping IPv4 sources for rate limiting.
        rrl_ipv4_prefix: u8 = 24, [env = "MONGODNS_RRL_IPV4_PREFIX", value_name = "BITS"];
        /// Prefix length grouping IPv6 sources for rate limiting.
        rrl_ipv6_prefix: u8 = 56, [env = "MONGODNS_RRL_IPV6_PREFIX", value_name = "BITS"];
        /// TSIG keys: `ALG:NAME:BASE64SECRET [zones=Z1,Z2] [from=NET1,NET2] [update]`,
        /// ALG hmac-sha256, hmac-sha384 or hmac-sha512 (repeat for several).
        /// A key opens transfers and signs replies only for its zones (all
        /// without zones=) and, with from=, only for transfers and updates from those
        /// blocks; with update, it may change its zones by DNS UPDATE (off
        /// for every key by default). Prefer tsig_keyfile: a command line is
        /// visible to local users.
        tsig_key: Vec<String> = Vec::new(),
            [env = "MONGODNS_TSIG_KEY", value_name = "KEY"];
        /// Shortest truncated TSIG MAC accepted, in bytes (16 to 32): a
        /// valid MAC shorter than this gets NOTAUTH/BADTRUNC; under 16
        /// (RFC 8945's floor for hmac-sha256) is FORMERR whatever this says.
        tsig_min_mac_bytes: usize = 16,
            [env = "MONGODNS_TSIG_MIN_MAC_BYTES", value_name = "BYTES"];
        /// Secondaries to NOTIFY (RFC 1996) when a zone's serial moves, for
        /// every zone without its own list (`mongodns-zone set-notify`):
        /// `ADDR[:PORT][,key=NAME]` (port 53; key: one of the TSIG keys,
        /// the NOTIFY is then signed with it); repeat for several. Empty:
        /// only zones with their own list are notified. In the environment,
        /// several are separated by spaces.
        notify: Vec<String> = Vec::new(),
            [env = "MONGODNS_NOTIFY", value_delimiter = ' ', value_name = "ADDR[:PORT][,key=NAME]"];
        /// Shortest time between two NOTIFYs of one zone, in ms: the
        /// publishes between are folded into the next (the last serial is
        /// always notified).
        notify_interval_ms: u64 = 1000, [env = "MONGODNS_NOTIFY_INTERVAL_MS", value_name = "MS"];
        /// NOTIFY datagrams sent to one secondary at most (the first and the
        /// retries) before it is given up on.
        notify_retries: u32 = 5, [env = "MONGODNS_NOTIFY_RETRIES", value_name = "N"];
        /// Milliseconds to wait for a NOTIFY's reply; each retry waits twice
        /// as long as the one before.
        notify_timeout_ms: u64 = 1000, [env = "MONGODNS_NOTIFY_TIMEOUT_MS", value_name = "MS"];
        /// On SIGTERM, milliseconds to wait for queries in flight before exiting.
        shutdown_grace_ms: u64 = 5000, [env = "MONGODNS_SHUTDOWN_GRACE_MS", value_name = "MS"];
        /// MongoDB connection string.
        mongodb_uri: String = "mongodb://127.0.0.1:27017/?directConnection=true".into(),
            [env = "MONGODB_URI", value_name = "URI"];
        /// Database holding the zones.
        database: String = "mongodns".into(), [env = "MONGODNS_DATABASE", value_name = "NAME"];
        /// Which replica-set members answer reads: primary, primaryPreferred,
        /// secondary, secondaryPreferred or nearest (see docs/scaling.md).
        read_preference: String = "primary".into(),
            [env = "MONGODNS_READ_PREFERENCE", value_name = "MODE"];
        /// Milliseconds to wait for the database at start and per operation.
        db_timeout_ms: u64 = 1500, [env = "MONGODNS_DB_TIMEOUT_MS", value_name = "MS"];
        /// Milliseconds one database health check (every 500 ms) may take
        /// before the database is declared down, its connections closed and
        /// every read in flight failed; keep it above what a busy database
        /// takes to answer (a frozen one is noticed this long after it froze).
        db_check_timeout_ms: u64 = 5000,
            [env = "MONGODNS_DB_CHECK_TIMEOUT_MS", value_name = "MS"];
        /// Database reads at once (cache misses); more wait in a queue.
        db_max_inflight: usize = 64, [env = "MONGODNS_DB_MAX_INFLIGHT", value_name = "N"];
        /// Database reads allowed to wait; a miss beyond that is answered at
        /// once (SERVFAIL, or stale) instead of queueing behind reads that
        /// would time out: an overloaded cold cache still warms.
        db_max_queued: usize = 1024, [env = "MONGODNS_DB_MAX_QUEUED", value_name = "N"];
        /// Zones loaded into memory at start; with every zone loaded, a name
        /// in no zone is known at once, without a database read (0: off;
        /// with more zones than this, zones are looked up per name).
        zone_preload_max: usize = 2_000_000, [env = "MONGODNS_ZONE_PRELOAD_MAX", value_name = "N"];
        /// Memory for resident zones, in MiB: zones held whole in memory
        /// answer every query without a database read (0: off, every zone
        /// on the record cache's path; no_cache turns it off too).
        resident_mb: usize = 0, [env = "MONGODNS_RESIDENT_MB", value_name = "MIB"];
        /// Which zones may be resident: `all`, or a comma-separated list of
        /// zone apexes (with resident_mb above 0).
        resident_zones: String = "all".into(),
            [env = "MONGODNS_RESIDENT_ZONES", value_name = "all|ZONES"];
        /// Most records a resident zone may have; larger zones stay on the
        /// record cache's path (0: any size the budget holds).
        resident_max_records: usize = 0,
            [env = "MONGODNS_RESIDENT_MAX_RECORDS", value_name = "N"];
        /// How long a resident zone's copy goes on answering after the zone
        /// changed, while it catches up (names re-read, a new version
        /// loading): answers up to this much older than the database, at
        /// memory speed. 0 (the default): only a current copy answers, and
        /// a write is answered within the freshness bound.
        resident_lag_ms: u64 = 0, [env = "MONGODNS_RESIDENT_LAG_MS", value_name = "MS"];
        /// Seconds a zone transfer waits, before its first message, for the
        /// copy of a resident zone's version being loaded (a replace or a
        /// secure-zone just published), then sends it from memory; past
        /// this, or with 0, it reads the version from the database.
        resident_transfer_wait_s: u64 = 600,
            [env = "MONGODNS_RESIDENT_TRANSFER_WAIT_S", value_name = "SECONDS"];
        /// Replies kept in the packet cache (0 turns it off).
        packet_cache_entries: usize = 1_000_000,
            [env = "MONGODNS_PACKET_CACHE_ENTRIES", value_name = "N"];
        /// Memory bound of the packet cache, in MiB.
        packet_cache_mb: usize = 512, [env = "MONGODNS_PACKET_CACHE_MB", value_name = "MIB"];
        /// Nodes kept in the record cache (0 turns it off).
        record_cache_entries: usize = 1_000_000,
            [env = "MONGODNS_RECORD_CACHE_ENTRIES", value_name = "N"];
        /// Memory bound of the record cache, in MiB.
        record_cache_mb: usize = 512, [env = "MONGODNS_RECORD_CACHE_MB", value_name = "MIB"];
        /// Longest time anything is cached, in seconds (record TTLs cap it further).
        cache_max_ttl: u64 = 300, [env = "MONGODNS_CACHE_MAX_TTL", value_name = "SECONDS"];
        /// How long a missing name or a name in no zone is cached, in seconds.
        cache_negative_ttl: u64 = 60, [env = "MONGODNS_CACHE_NEGATIVE_TTL", value_name = "SECONDS"];
        /// Milliseconds between checks for changed zones (writes are seen
        /// within about this long).
        freshness_ms: u64 = 250, [env = "MONGODNS_FRESHNESS_MS", value_name = "MS"];
        /// UDP datagrams read and sent per system call (recvmmsg/sendmmsg on
        /// Linux), 1 to 32; 1 reads and answers one query at a time.
        udp_batch: usize = 32, [env = "MONGODNS_UDP_BATCH", value_name = "N"];
        /// Microseconds a UDP receive thread waits after a batch of several
        /// queries, but not a full one, so that the next carries more
        /// (fewer wake-ups per query under load, at most this much added
        /// latency; 0: never waits). Linux, batches above 1; at most 1000.
        udp_coalesce_us: u64 = 200, [env = "MONGODNS_UDP_COALESCE_US", value_name = "US"];
        /// How UDP datagrams are shared among the workers' sockets: `packets`
        /// (each to a worker at random, so a few busy clients keep every
        /// worker busy) or `flows` (the kernel's hash: one client socket,
        /// one worker).
        udp_spread: UdpSpread = UdpSpread::Packets, [env = "MONGODNS_UDP_SPREAD", value_name = "HOW"];
        /// UDP cache misses answered at once, server-wide; more are dropped
        /// (the client retries) and counted (mongodns_udp_miss_overflows).
        udp_max_misses: usize = 4096, [env = "MONGODNS_UDP_MAX_MISSES", value_name = "N"];
        /// Turn every cache off (each query reads the database): for measuring.
        no_cache: bool = false,
            [env = "MONGODNS_NO_CACHE", num_args = 0..=1, require_equals = true,
             default_missing_value = "true", value_parser = boolish(), value_name = "BOOL"];
        /// Log filter (tracing syntax), e.g. `info` or `mongodns_server=debug`.
        log: String = "info".into(), [env = "MONGODNS_LOG", value_name = "FILTER"];
        /// Log line format on stderr.
        log_format: LogFormat = LogFormat::Text, [env = "MONGODNS_LOG_FORMAT", value_name = "FORMAT"];
        /// Log one query in N (1 logs every query).
        query_log_sample: u32 = 1, [env = "MONGODNS_QUERY_LOG_SAMPLE", value_name = "N"];
        /// Resident zones given series of their own on /metrics (the
        /// largest by bytes); the rest are summed in mongodns_resident_unlisted_*.
        metrics_zone_series: usize = 100,
            [env = "MONGODNS_METRICS_ZONE_SERIES", value_name = "N"];
        /// Control-endpoint connections served at once; more are closed.
        control_max_connections: usize = 16,
            [env = "MONGODNS_CONTROL_MAX_CONNECTIONS", value_name = "N"];
        /// Query-log lines each answering thread queues for the writer thread;
        /// when full, lines are dropped and counted (mongodns_query_log_dropped).
        query_log_buffer: usize = 8192, [env = "MONGODNS_QUERY_LOG_BUFFER", value_name = "LINES"];
        /// Rotate the query-log file when it reaches this many MiB (0: only on
        /// SIGHUP, for logrotate).
        query_log_max_mb: u64 = 0, [env = "MONGODNS_QUERY_LOG_MAX_MB", value_name = "MIB"];
        /// Rotated query-log files kept (FILE.1 … FILE.N).
        query_log_keep: usize = 5, [env = "MONGODNS_QUERY_LOG_KEEP", value_name = "N"];
        /// Line format of the syslog query-log output.
        query_log_syslog_format: SyslogFormat = SyslogFormat::Rfc3164,
            [env = "MONGODNS_QUERY_LOG_SYSLOG_FORMAT", value_name = "FORMAT"];
    }
    optional {
        /// File of TSIG keys, one a line, as for tsig_key.
        tsig_keyfile: String, [env = "MONGODNS_TSIG_KEYFILE", value_name = "FILE"];
        /// SO_RCVBUF for UDP sockets, in bytes (1 MiB if unset; forced past
        /// net.core.rmem_max when the process has CAP_NET_ADMIN).
        udp_rcvbuf: usize, [env = "MONGODNS_UDP_RCVBUF", value_name = "BYTES"];
        /// SO_SNDBUF for UDP sockets, in bytes (kernel default if unset).
        udp_sndbuf: usize, [env = "MONGODNS_UDP_SNDBUF", value_name = "BYTES"];
        /// With a secondary read preference, skip members lagging more than
        /// this many seconds behind the primary (MongoDB's minimum is 90).
        read_max_staleness_s: u64, [env = "MONGODNS_READ_MAX_STALENESS_S", value_name = "SECONDS"];
        /// Address of the HTTP control endpoint (/stats, /metrics, /health,
        /// POST /purge); off if unset. A non-loopback address is warned about.
        control_listen: SocketAddr, [env = "MONGODNS_CONTROL_LISTEN", value_name = "ADDR"];
        /// Token `POST /purge` must send as `Authorization: Bearer TOKEN`;
        /// unset, purging is refused (the read-only pages stay open).
        control_token: String, [env = "MONGODNS_CONTROL_TOKEN", value_name = "TOKEN"];
        /// Address of the PowerDNS-compatible HTTP API (/api/v1: zones and
        /// RRsets); off if unset. Needs api_key.
        api_listen: SocketAddr, [env = "MONGODNS_API_LISTEN", value_name = "ADDR"];
        /// Key every HTTP API request must send as `X-API-Key`; required
        /// with api_listen.
        api_key: String, [env = "MONGODNS_API_KEY", value_name = "KEY"];
        /// The address NOTIFYs are sent from (secondaries check it against
        /// their ACLs); unset, the kernel picks one per secondary.
        notify_source: std::net::IpAddr, [env = "MONGODNS_NOTIFY_SOURCE", value_name = "ADDR"];
        /// The server's identity for NSID (RFC 5001), sent to queries that ask
        /// with an empty NSID option: text, or `hex:` and hex digits; off if unset.
        nsid: String, [env = "MONGODNS_NSID", value_name = "TEXT"];
        /// Query log: a file path, `syslog` (/dev/log) or `syslog:SOCKET`; off
        /// if unset.
        query_log: String, [env = "MONGODNS_QUERY_LOG", value_name = "DEST"];
        /// Catalog zone (RFC 9432, version 2) this server keeps listing every
        /// served zone, created if missing (e.g. catalog.invalid.); off if unset.
        catalog_zone: String, [env = "MONGODNS_CATALOG_ZONE", value_name = "ZONE"];
    }
}

/// The effective configuration and where each value came from.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The values.
    pub config: Config,
    /// Option name ─► source of its value.
    pub sources: BTreeMap<&'static str, Source>,
    /// The file read, if any.
    pub file: Option<PathBuf>,
}

/// The flags as parsed, with what clap knows about where each came from;
/// kept so SIGHUP can re-read the file under the same flags.
#[derive(Clone, Debug)]
pub struct Cli {
    /// The parsed flags.
    pub args: Args,
    sources: BTreeMap<String, Source>,
}

impl Cli {
    /// Parses the process's arguments (exits with clap's message on error).
    pub fn parse() -> Cli {
        Self::from_matches(Args::command().get_matches())
    }

    /// Parses `argv` (the first item is the program name).
    pub fn try_parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Ok(Self::from_matches(
            Args::command().try_get_matches_from(argv)?,
        ))
    }

    fn from_matches(matches: ArgMatches) -> Cli {
        let args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        let mut sources = BTreeMap::new();
        for name in OPTION_NAMES {
            let source = match matches.value_source(name) {
                Some(ValueSource::EnvVariable) => Source::Env,
                Some(ValueSource::CommandLine) => Source::Flag,
                _ => continue,
            };
            sources.insert((*name).to_string(), source);
        }
        Cli { args, sources }
    }

    /// Reads the file (if any) and applies the precedence; validates.
    pub fn resolve(&self) -> Result<Resolved, String> {
        let file = match &self.args.config {
            Some(path) => load_file(path)?,
            None => FileConfig::default(),
        };
        let resolved = merge(&self.args, &self.sources, file);
        resolved.config.validate().map_err(|problems| {
            let mut text = String::from("invalid configuration:");
            for p in problems {
                let _ = write!(text, "\n  {p}");
            }
            text
        })?;
        Ok(resolved)
    }
}

fn load_file(path: &Path) -> Result<FileConfig, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("config file {}: {e}", path.display()))
}

impl Config {
    /// The catalog zone to keep, if one is set (absolute, a final dot or not).
    pub fn catalog(&self) -> Result<Option<dns::Name>, String> {
        let Some(text) = self.catalog_zone.as_deref() else {
            return Ok(None);
        };
        let absolute = format!("{}.", text.trim_end_matches('.'));
        dns::Name::parse(&absolute, None)
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// The resident zones' settings (`resident_zones` checked by
    /// `validate`; a bad list here, or `no_cache`, means residency off).
    pub fn resident_config(&self) -> crate::resident::ResidentConfig {
        match crate::resident::ZoneChoice::parse(&self.resident_zones) {
            // `no_cache` means every lookup reads the database: no residency.
            Ok(_) if self.no_cache => crate::resident::ResidentConfig::off(),
            Ok(zones) => crate::resident::ResidentConfig {
                budget_bytes: self.resident_mb << 20,
                zones,
                max_records: self.resident_max_records,
                max_lag: std::time::Duration::from_millis(self.resident_lag_ms),
                transfer_wait: std::time::Duration::from_secs(self.resident_transfer_wait_s),
            },
            Err(_) => crate::resident::ResidentConfig::off(),
        }
    }

    /// `axfr_allow` parsed (call after `validate`; invalid entries are skipped).
    pub fn axfr_networks(&self) -> Vec<Cidr> {
        self.axfr_allow
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect()
    }

    /// Worker count with 0 resolved to the number of cores.
    pub fn worker_count(&self) -> usize {
        if self.workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.workers
        }
    }
}

/// The MongoDB spelling of a read preference (case-insensitive match).
pub fn canonical_read_preference(text: &str) -> Option<&'static str> {
    READ_PREFERENCES
        .iter()
        .find(|p| p.eq_ignore_ascii_case(text) || p.replace('P', "-p").eq_ignore_ascii_case(text))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(argv: &[&str]) -> Cli {
        let mut full = vec!["mongodns-server"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).unwrap()
    }

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn file_then_flag() {
        let dir = std::env::temp_dir().join(format!("mdcfg{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.toml");
        std::fs::write(
            &f,
            "workers = 3\ndatabase = \"fromfile\"\nlisten = [\"[::1]:53\", \"127.0.0.1:53\"]\n",
        )
        .unwrap();
        let r = cli(&["--config", f.to_str().unwrap(), "--workers", "5"])
            .resolve()
            .unwrap();
        assert_eq!(r.config.workers, 5);
        assert_eq!(r.sources["workers"], Source::Flag);
        assert_eq!(r.config.database, "fromfile");
        assert_eq!(r.sources["database"], Source::File);
        assert_eq!(r.config.listen.len(), 2);
        assert_eq!(r.sources["max_udp_size"], Source::Default);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn unknown_key_and_bad_values() {
        let dir = std::env::temp_dir().join(format!("mdcfgb{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("b.toml");
        std::fs::write(&f, "wrokers = 3\n").unwrap();
        let e = cli(&["--config", f.to_str().unwrap()])
            .resolve()
            .unwrap_err();
        assert!(e.contains("wrokers"), "{e}");
        let e = cli(&["--max-udp-size", "100", "--read-preference", "sometimes"])
            .resolve()
            .unwrap_err();
        assert!(
            e.contains("max_udp_size") && e.contains("read_preference"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn notify_targets_and_nsid_are_checked() {
        let ok = cli(&[
            "--notify",
            "192.0.2.1",
            "--notify",
            "[2001:db8::1]:5300,key=k",
        ])
        .resolve()
        .unwrap();
        assert_eq!(ok.config.notify.len(), 2);
        let e = cli(&["--notify", "nowhere", "--nsid", "hex:zz"])
            .resolve()
            .unwrap_err();
        assert!(e.contains("notify") && e.contains("nsid"), "{e}");
        let e = cli(&["--notify-retries", "0"]).resolve().unwrap_err();
        assert!(e.contains("notify_retries"), "{e}");
    }

    #[test]
    fn the_catalog_zone_must_be_a_name() {
        let set = cli(&["--catalog-zone", "catalog.invalid"])
            .resolve()
            .unwrap();
        let name = set.config.catalog().unwrap().unwrap();
        assert_eq!(name.to_string(), "catalog.invalid.");
        assert_eq!(cli(&[]).resolve().unwrap().config.catalog(), Ok(None));
        let long = format!("{}.invalid", "a".repeat(64));
        let e = cli(&["--catalog-zone", &long]).resolve().unwrap_err();
        assert!(e.contains("catalog_zone"), "{e}");
    }

    #[test]
    fn networks_and_read_preferences() {
        let c = cli(&["--axfr-allow", "10.0.0.0/8,2001:db8::1"])
            .resolve()
            .unwrap();
        assert_eq!(c.config.axfr_networks().len(), 2);
        assert!(cli(&["--axfr-allow", "10.0.0.0/33"]).resolve().is_err());
        let default = cli(&[]).resolve().unwrap();
        assert!(
            default.config.axfr_networks().is_empty(),
            "transfers denied by default"
        );
        let none = cli(&["--axfr-allow="]).resolve().unwrap();
        assert!(none.config.axfr_networks().is_empty());
        assert_eq!(
            canonical_read_preference("secondarypreferred"),
            Some("secondaryPreferred")
        );
        assert_eq!(
            canonical_read_preference("secondary-preferred"),
            Some("secondaryPreferred")
        );
    }

    #[test]
    fn the_http_api_needs_a_key() {
        let keyless = cli(&["--api-listen", "127.0.0.1:8081"]).resolve();
        assert!(keyless.unwrap_err().contains("api_listen needs api_key"));
        let keyed = cli(&["--api-listen", "127.0.0.1:8081", "--api-key", "k3y-k3y"])
            .resolve()
            .unwrap();
        assert!(keyed.render().contains("api_key = \"<secret>\""));
        assert!(!keyed.render().contains("k3y-k3y"));
        let clash = ["--api-listen", "127.0.0.1:8081", "--api-key", "k"];
        let clash = cli(&[&clash[..], &["--control-listen", "127.0.0.1:8081"]].concat());
        assert!(clash.resolve().is_err());
    }

    #[test]
    fn resident_zones_are_off_by_default_and_with_no_cache() {
        let config = |argv: &[&str]| cli(argv).resolve().unwrap().config;
        assert!(!config(&[]).resident_config().enabled());
        let on = config(&["--resident-mb", "64", "--resident-zones", "a.test,b.test."]);
        assert_eq!(on.resident_config().budget_bytes, 64 << 20);
        assert!(on.resident_config().wants(&"a.test.".parse().unwrap()));
        assert!(!on.resident_config().wants(&"c.test.".parse().unwrap()));
        assert!(
            on.resident_config().max_lag.is_zero(),
            "no lag unless asked"
        );
        let lag = config(&["--resident-mb", "64", "--resident-lag-ms", "500"]);
        assert_eq!(
            lag.resident_config().max_lag,
            std::time::Duration::from_millis(500)
        );
        let no_cache = config(&["--resident-mb", "64", "--no-cache"]);
        assert!(!no_cache.resident_config().enabled());
        let bad = Config {
            resident_zones: " , ".into(),
            ..Config::default()
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn bool_flag_forms() {
        assert!(cli(&["--no-cache"]).resolve().unwrap().config.no_cache);
        assert!(
            !cli(&["--no-cache=false"])
                .resolve()
                .unwrap()
                .config
                .no_cache
        );
    }
}
