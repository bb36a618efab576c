//! Creating a zone: its apex (SOA and NS) written as one replace, shared by
//! `mongodns-zone create-zone` and the server's HTTP API.
//!
//! ```text
//!  NewZone { apex, nameservers, rname, ttl, serial } ─► apex_node (SOA + NS)
//!  create_zone(nodes) ─► exists? ─► ZoneExists
//!     ─► begin_zone_write(Replace) ─► write_nodes ─► finish ─► served zone
//! ```

use backend_mongo::{NodeWrite, Store, StoreError, WriteMode};

use dns::{Name, RRset, RType, ZoneInfo};
use std::time::Duration;

/// The SOA timers of a new zone: refresh, retry, expire, minimum.
const SOA_TIMERS: [u32; 4] = [7200, 900, 1_209_600, 300];

/// What a new zone's apex holds.
#[derive(Clone, Debug)]
pub struct NewZone {
    /// The zone's apex.
    pub apex: Name,
    /// Its name servers (the first is the SOA's MNAME); at least one.
    pub nameservers: Vec<Name>,
    /// The SOA's responsible mailbox, as a name.
    pub rname: Name,
    /// TTL of the SOA and NS records.
    pub ttl: u32,
    /// The first serial.
    pub serial: u32,
}

/// Why a zone was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The zone is already there.
    #[error("zone {0} exists already")]
    ZoneExists(Name),
    /// No name server was given.
    #[error("zone {0} needs at least one name server")]
    NoNameservers(Name),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl NewZone {
    /// The apex node: the SOA (MNAME the first name server) and the NS RRset.
    pub fn apex_node(&self) -> Result<NodeWrite, CreateError> {
        let mname = self
            .nameservers
            .first()
            .ok_or_else(|| CreateError::NoNameservers(self.apex.clone()))?;
        let mut soa = mname.as_wire().to_vec();
        soa.extend_from_slice(self.rname.as_wire());
        for v in std::iter::once(self.serial).chain(SOA_TIMERS) {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        let ns = self
            .nameservers
            .iter()
            .map(|n| n.as_wire().into())
            .collect();
        let set = |rtype, rdata| RRset {
            rtype,
            ttl: self.ttl,
            rdata,
        };
        Ok(NodeWrite {
            name: self.apex.clone(),
            rrsets: vec![
                set(RType::SOA, vec![soa.into_boxed_slice()]),
                set(RType::NS, ns),
            ],
        })
    }
}

/// Today (UTC) as a serial: YYYYMMDD01.
pub fn today_serial() -> u32 {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    let (y, m, d) = dns::civil::civil_from_days(days);
    (y as u32) * 1_000_000 + m * 10_000 + d * 100 + 1
}

/// Creates `zone` holding `nodes` (one replace write, published at once);
/// a zone already there is refused.
pub async fn create_zone(
    store: &Store,
    zone: &Name,
    nodes: &[NodeWrite],
) -> Result<ZoneInfo, CreateError> {
    if store.find_zone(zone).await?.is_some() {
        return Err(CreateError::ZoneExists(zone.clone()));
    }
    let writer = store.begin_zone_write(zone, WriteMode::Replace).await?;
    writer.write_nodes(nodes).await?;
    Ok(writer.finish(Duration::ZERO).await?)
}
