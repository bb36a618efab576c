//! Test support for every crate's integration tests: one home for the
//! throwaway database, the server binary, sockets, the TCP relay and zone
//! fixtures.
//!
//! ```text
//!  backend_mongo::testing (re-exported): database_uri, TestDb, block_on,
//!                                        example_net, foreign writers
//!  TestZoneDb + ZoneImport: a TestDb that imports zone text in-process;
//!  zone_db: a fresh one serving one imported zone; small_zone!: such a text
//!  binary(name) ─► target/<profile>/name, built by cargo when missing
//!  ServerProcess::start ─► mongodns-server on a free port, ready to answer
//!  ask_udp / ask_tcp: hand-built query ─► reply parsed by hickory-proto
//!  http / stat: the control endpoint and the API, by hyper's client
//!  Relay: a database link to cut, freeze, slow down or listen to
//!  run_bounded: a child with a time limit
//!  axfr_text / verify_signed_zone: the served zone by dig, and both verifiers;
//!  verify_served_zone: both at once;  run_with_input: a tool fed a script;
//!  rcode_udp: the rcode of a question
//!  update_message: a DNS UPDATE built by hand (the caller signs it)
//!  seed / Rng: seeded randomness that a printed seed replays
//!  dig_transfer: AXFR/IXFR/SOA by dig, one text block;  transfer_lines,
//!  axfr_set, apply_ixfr: IXFR replies checked against the zone
//!  Secondary::knot / ::nsd: real secondaries of a server (NOTIFY, AXFR)
//! ```
//!
//! A dev-dependency only. It is a crate, not a module, because it needs
//! what `backend-mongo` may not depend on (the importer, hickory-proto) and
//! because a test of `loadtools` or `signer` must reach it too. Tests that
//! need only the database may use `backend_mongo::testing` directly.
#![warn(missing_docs, unreachable_pub)]

mod binaries;
mod control;
mod import;
mod ixfr_check;
mod ports;
mod process;
mod query;
mod relay;
mod secondary;
mod seeded;
mod server;
mod update;
mod zone_check;

pub use backend_mongo::testing::*;
pub use binaries::{bin_dir, binary, run_tool};
pub use control::{closed_within, connect_loopback, dechunk, http, http_as, http_request, stat};
pub use import::{zone_db, TestZoneDb, ZoneImport};
pub use ixfr_check::{
    apply_ixfr, axfr_set, is_soa, ixfr_query, serial_after, serial_of, transfer_lines,
};
pub use ports::{free_port, free_tcp_port};
pub use process::{run_bounded, run_with_input};
pub use query::{
    answered_after, ask_tcp, ask_udp, assert_median_within, assert_median_within_a_second,
    build_query, lines, rcode_udp, tcp_exchange, time_until, udp_exchange,
};
pub use relay::{bson_has_key, is_get_more, sent_commands, Relay};
pub use secondary::{soa_serial, Keyed, Secondary, SecondaryKind, SharedKey};
pub use seeded::{seed, Rng};
pub use server::{start_with_control, start_with_control_uri, ServerProcess};
pub use update::{update_message, UpdateRr};
pub use zone_check::{
    axfr_text, comparable_transfer, dig_transfer, dig_transfer_with, record_lines,
    verify_served_zone, verify_signed_zone,
};
