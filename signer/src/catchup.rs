//! Catching a new version up with what merge writers wrote into the served
//! one while it was being built (`secure-zone`, `unsecure-zone`).
//!
//! ```text
//!  pass(): zones._id ─► still serving `from`? (else: replaced, start over)
//!     ─► change records of gen seen+1..=now (every one accounted for,
//!        else start over) ─► names
//!     ─► each name: ordinary RRsets read from `from`, written into `to`
//!        (a name gone from `from` is deleted from `to`)
//!        (keeping `to`'s chain fields) ─► signed: MergeSigner::resign_names
//!  the caller repeats passes until one is small, then takes the zone lock
//!  (no writer can publish), runs a last pass and switches
//! ```

use crate::merge::MergeSigner;
use crate::plan::signer_owned;
use crate::SignError;
use backend_mongo::dnssec::{FullNode, SignedRRset};
use backend_mongo::{ChangeRecord, Name, RType, Store, StoreError};

/// Most generations looked at record by record in one pass; more: not
/// accounted for. A pass after a long signing covers every generation
/// since it began (two importers publishing every 200 ms make 10 a second).
pub(crate) const MAX_GENERATIONS: i64 = 65_536;

/// Change records read at once (point reads by `_id`, concurrently).
const RECORDS_AT_ONCE: i64 = 256;

/// The change records of `zone` for generations `from+1..=to`, or `None`
/// when they do not account for every generation in between (a record
/// missing, saying "all", or too many generations). A generation with no
/// record is accounted for when another zone sits at it now.
pub(crate) async fn records_since(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
) -> Result<Option<Vec<(i64, ChangeRecord)>>, StoreError> {
    if to <= from {
        return Ok(Some(Vec::new()));
    }
    if to - from > MAX_GENERATIONS {
        return Ok(None);
    }
    let mut records = change_records_between(store, from, to).await?;
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for gen in from + 1..=to {
        match records.remove(&gen) {
            Some(r) if r.zone == *zone => {
                if r.names.is_none() {
                    return Ok(None);
                }
                out.push((gen, r));
            }
            Some(_) => {}
            None => missing.push(gen),
        }
    }
    if !missing.is_empty() {
        let others = store.zones_changed_since(from).await?;
        let explained = |g: &i64| others.iter().any(|z| z.gen == *g && z.apex != *zone);
        if !missing.iter().all(explained) {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// True when a change record of `zone` for generations `from+1..=to` is
/// not signed (a writer that does not sign, or found the lease held), or
/// when there are too many generations to look at.
pub(crate) async fn unsigned_writes_since(
    store: &Store,
    zone: &Name,
    from: i64,
    to: i64,
) -> Result<bool, StoreError> {
    if to - from > MAX_GENERATIONS {
        return Ok(true);
    }
    let records = change_records_between(store, from, to).await?;
    Ok(records.values().any(|r| r.zone == *zone && !r.signed))
}

/// The change records of generations `from+1..=to` (any zone), read
/// [`RECORDS_AT_ONCE`] at a time.
async fn change_records_between(
    store: &Store,
    from: i64,
    to: i64,
) -> Result<std::collections::HashMap<i64, ChangeRecord>, StoreError> {
    let mut records = std::collections::HashMap::new();
    let mut first = from + 1;
    while first <= to {
        let last = (first + RECORDS_AT_ONCE - 1).min(to);
        records.extend(store.change_records(first, last).await?);
        first = last + 1;
    }
    Ok(records)
}

/// Why a catch-up cannot go on: the caller builds the version again.
#[derive(Debug)]
pub(crate) struct StartOver(pub String);

/// A new version being caught up with the served one.
pub(crate) struct CatchUp<'a> {
    store: &'a Store,
    zone: &'a Name,
    /// The served version the new one was built from.
    from: i64,
    /// The new version.
    to: i64,
    /// Last generation caught up with.
    seen: i64,
    /// Signs what is copied (`secure-zone`); `None` copies plain records.
    signer: Option<MergeSigner>,
    /// Names copied so far.
    pub copied: u64,
}

impl<'a> CatchUp<'a> {
    /// Starts from generation `seen` (read before `from` was read).
    pub(crate) fn new(
        store: &'a Store,
        zone: &'a Name,
        from: i64,
        to: i64,
        seen: i64,
        signer: Option<MergeSigner>,
    ) -> Self {
        CatchUp {
            store,
            zone,
            from,
            to,
            seen,
            signer,
            copied: 0,
        }
    }

    /// The signer, for the SOA after the last pass.
    pub(crate) fn signer(&mut self) -> Option<&mut MergeSigner> {
        self.signer.as_mut()
    }

    /// One pass; returns how many names it copied, or why to start over.
    pub(crate) async fn pass(&mut self) -> Result<Result<usize, StartOver>, SignError> {
        let now = self
            .store
            .find_zone(self.zone)
            .await?
            .ok_or_else(|| StoreError::NoSuchZone(self.zone.to_string()))?;
        if now.ver != self.from {
            return Ok(Err(StartOver(format!(
                "another writer switched the zone to version {} meanwhile",
                now.ver
            ))));
        }
        let Some(records) = records_since(self.store, self.zone, self.seen, now.gen).await? else {
            return Ok(Err(StartOver(
                "writes happened that their change records do not list".into(),
            )));
        };
        let mut names: Vec<Name> = records
            .into_iter()
            .flat_map(|(_, r)| r.names.unwrap_or_default())
            .filter(|n| n.is_subdomain_of(self.zone))
            .collect();
        names.sort();
        names.dedup();
        for name in &names {
            self.copy(name).await?;
        }
        if let Some(signer) = self.signer.as_mut() {
            signer.resign_names(self.store, &names).await?;
            if signer.needs_full_resign() {
                return Ok(Err(StartOver(
                    "a delegation or DNAME appeared above existing names".into(),
                )));
            }
        }
        self.seen = now.gen;
        self.copied += names.len() as u64;
        Ok(Ok(names.len()))
    }

    /// Copies the ordinary RRsets of `name` from the served version into
    /// the new one, keeping the new one's chain fields and apex SOA.
    async fn copy(&self, name: &Name) -> Result<(), StoreError> {
        let src = self
            .store
            .read_full_node(self.zone, self.from, name)
            .await?;
        let dst = self.store.read_full_node(self.zone, self.to, name).await?;
        if src.is_none() {
            // Deleted from the served version (a record edit, or a foreign
            // writer): gone from the new one too. Signed, the signer then
            // finds it absent and relinks the chain around it.
            return match dst {
                Some(_) => self.store.delete_node(self.zone, self.to, name).await,
                None => Ok(()),
            };
        }
        let apex = name == self.zone;
        let kept = |r: &&SignedRRset| {
            let t = r.rrset.rtype;
            let ours = signer_owned(t) || (apex && t == RType::SOA);
            ours && (self.signer.is_some() || t == RType::SOA)
        };
        let mut rrsets: Vec<SignedRRset> = dst
            .as_ref()
            .map(|d| d.rrsets.iter().filter(kept).cloned().collect())
            .unwrap_or_default();
        for r in src.iter().flat_map(|s| s.rrsets.iter()) {
            let t = r.rrset.rtype;
            if signer_owned(t) || (apex && t == RType::SOA) {
                continue;
            }
            rrsets.push(SignedRRset {
                rrset: r.rrset.clone(),
                sigs: Vec::new(),
                sd: None,
            });
        }
        let node = FullNode {
            name: name.clone(),
            rrsets,
            dk: if self.signer.is_some() {
                dst.and_then(|d| d.dk)
            } else {
                None
            },
            nsec3: false,
        };
        self.store.put_full_node(self.zone, self.to, &node).await
    }
}
