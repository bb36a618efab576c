//! IXFR from the zone's journal over TCP (RFC 1995 §4), and the order of
//! a journal entry's records that IXFR over UDP shares.
//!
//! ```text
//!  Backend::journal_chain(zone, their serial) ─► JournalStream (transfer.rs
//!     asks; none ─► the whole zone)
//!  send_journal: our SOA ─► per entry (a batch at a time, as the messages
//!     go): old SOA, removed, new SOA, added (entry_records) ─► our SOA
//! ```

use super::packer::Packer;
use super::transfer::{Sink, TransferError};
use crate::guard::{bump, GUARD};
use backend_mongo::writer::JournalStream;
use dns::journal::{JournalEntry, JournalRecord};
use dns::{RRset, RType, ZoneInfo};
use futures::StreamExt;

/// An incremental IXFR (RFC 1995 §4): our SOA, then each change of the
/// journal as its old SOA, the records removed, its new SOA, the records
/// added; our SOA again. Streamed like a whole zone: the journal's
/// entries are read a batch at a time as the messages go.
pub(super) async fn send_journal(
    zone: &ZoneInfo,
    soa: &RRset,
    mut chain: JournalStream,
    pack: &mut Packer<'_>,
    sink: &mut Sink,
) -> Result<(), TransferError> {
    let apex = &zone.apex;
    sink.send_opt(pack.push(apex, RType::SOA, soa.ttl, &soa.rdata[0])?)
        .await?;
    let (mut records, mut changes) = (2, 0);
    while let Some(entry) = chain.next().await {
        for r in entry_records(&entry?) {
            sink.send_opt(pack.push(&r.owner, r.rtype, r.ttl, &r.rdata)?)
                .await?;
            records += 1;
        }
        changes += 1;
    }
    sink.send_opt(pack.push(apex, RType::SOA, soa.ttl, &soa.rdata[0])?)
        .await?;
    sink.send_opt(pack.finish()).await?;
    bump(&GUARD.ixfr_incremental);
    tracing::info!(zone = %apex, changes, records, messages = sink.sent, "incremental zone transfer");
    Ok(())
}

/// The records of one journal entry in IXFR order: its old SOA, the
/// records removed, its new SOA, the records added.
pub(super) fn entry_records(entry: &JournalEntry) -> impl Iterator<Item = &JournalRecord> {
    let removed = std::iter::once(&entry.from_soa).chain(&entry.removed);
    let added = std::iter::once(&entry.to_soa).chain(&entry.added);
    removed.chain(added)
}
