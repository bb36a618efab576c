//! Records grouped into node writes, with the empty non-terminals above
//! them.
//!
//! ```text
//!  Record (owner order) ─► NodeBuilder::add ─► the current owner's RRsets
//!     (a type the signer maintains: left out, counted as read)
//!  new owner ─► the previous node pushed out, the ancestors between the
//!  owner and the apex pushed as empty nodes (once each, recently seen skipped)
//! ```

use backend_mongo::NodeWrite;

use dns::presentation::Record;
use dns::{Name, RRset};
use std::collections::{HashSet, VecDeque};

/// Groups records by owner and type into node writes, adding the empty
/// non-terminals between each owner and the apex.
///
/// It also knows how far the input is *complete*: after any call, every
/// record before `complete` is in a node already pushed out. A batch cut
/// then holds the input's records up to that point, which is what a resume
/// checkpoint needs.
pub(super) struct NodeBuilder {
    zone: Name,
    current: Option<NodeWrite>,
    /// Recently emitted names, so ancestors are not written over and over.
    recent: HashSet<Name>,
    recent_order: VecDeque<Name>,
    /// Records added so far.
    pub(super) consumed: u64,
    /// Records that are in nodes already pushed out.
    pub(super) complete: u64,
}

const RECENT: usize = 4096;

impl NodeBuilder {
    pub(super) fn new(zone: Name, start: u64) -> Self {
        NodeBuilder {
            zone,
            current: None,
            recent: HashSet::new(),
            recent_order: VecDeque::new(),
            consumed: start,
            complete: start,
        }
    }

    fn remember(&mut self, name: &Name) -> bool {
        if self.recent.contains(name) {
            return false;
        }
        if self.recent_order.len() == RECENT {
            if let Some(old) = self.recent_order.pop_front() {
                self.recent.remove(&old);
            }
        }
        self.recent.insert(name.clone());
        self.recent_order.push_back(name.clone());
        true
    }

    /// Adds a record; pushes finished nodes to `out`. A record of a type
    /// the signer maintains is counted as read and left out.
    pub(super) fn add(&mut self, record: Record, out: &mut Vec<NodeWrite>) {
        if record.rtype.is_signer_owned() {
            self.consumed += 1;
            return;
        }
        if self
            .current
            .as_ref()
            .is_some_and(|n| n.name != record.owner)
        {
            out.push(self.current.take().expect("checked"));
        }
        if self.current.is_none() {
            self.start_node(&record.owner, out);
        }
        self.consumed += 1;
        let node = self.current.as_mut().expect("set above");
        match node.rrsets.iter_mut().find(|r| r.rtype == record.rtype) {
            Some(rrset) => {
                // Duplicate records in an RRset are one record (RFC 2181 §5).
                if !rrset.rdata.iter().any(|r| r[..] == record.rdata[..]) {
                    rrset.rdata.push(record.rdata.into_boxed_slice());
                }
                rrset.ttl = rrset.ttl.min(record.ttl);
            }
            None => node.rrsets.push(RRset {
                rtype: record.rtype,
                ttl: record.ttl,
                rdata: vec![record.rdata.into_boxed_slice()],
            }),
        }
    }

    /// Opens the node of `owner`, first pushing the empty non-terminals:
    /// every ancestor strictly between the owner and the apex not seen
    /// recently.
    fn start_node(&mut self, owner: &Name, out: &mut Vec<NodeWrite>) {
        self.complete = self.consumed;
        let depth = owner.label_count() - self.zone.label_count();
        let ancestors: Vec<Name> = owner
            .ancestors()
            .skip(1)
            .take(depth.saturating_sub(1))
            .collect();
        for ancestor in ancestors {
            if self.remember(&ancestor) {
                out.push(NodeWrite {
                    name: ancestor,
                    rrsets: Vec::new(),
                });
            }
        }
        self.remember(owner);
        self.current = Some(NodeWrite {
            name: owner.clone(),
            rrsets: Vec::new(),
        });
    }

    /// Pushes the last node out: every record added is then complete.
    pub(super) fn finish(&mut self, out: &mut Vec<NodeWrite>) {
        if let Some(node) = self.current.take() {
            out.push(node);
        }
        self.complete = self.consumed;
    }
}
