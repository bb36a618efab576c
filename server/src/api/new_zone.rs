//! A new zone's nodes, built in memory from a `POST …/zones`: the RRsets
//! given are applied to the new apex by the change-set rules, so that
//! whatever the rules refuse is found before anything is written, and the
//! zone is then written in one replace (served whole, or not at all).
//!
//! ```text
//!  apex (SOA + NS) + edits ─► NodeEdit per name, edits in order
//!     an edit refused, an RRset too large for one message ─► 422, nothing written
//!  ─► nodes: the apex, every name left with data, the empty
//!     non-terminals between them and the apex
//! ```

use super::json::ApiError;
use backend_mongo::NodeWrite;
use dns::edit::{Edited, NodeEdit, RecordEdit};
use dns::{Name, RRset};
use std::collections::BTreeMap;

/// The nodes of the new zone `zone`: `apex` with `edits` applied.
pub fn zone_nodes(
    zone: &Name,
    apex: NodeWrite,
    edits: &[RecordEdit],
) -> Result<Vec<NodeWrite>, ApiError> {
    let mut names = BTreeMap::new();
    names.insert(zone.clone(), NodeEdit::new(zone, zone, apex.rrsets, false));
    let mut refused = Vec::new();
    for edit in edits {
        let node = names
            .entry(edit.name().clone())
            .or_insert_with(|| NodeEdit::new(zone, edit.name(), Vec::new(), false));
        if let Edited::Ignored(why) = node.apply(edit) {
            refused.push(format!("{}: {why}", edit.name()));
        }
    }
    refused.extend(names.values().filter_map(NodeEdit::too_large));
    if !refused.is_empty() {
        return Err(ApiError::invalid(format!(
            "not created: {}",
            refused.join("; ")
        )));
    }
    Ok(with_empty_non_terminals(zone, names))
}

/// The names holding data, and an empty node for every name between one
/// of them and the apex that holds none.
fn with_empty_non_terminals(zone: &Name, names: BTreeMap<Name, NodeEdit>) -> Vec<NodeWrite> {
    let mut nodes: BTreeMap<Name, Vec<RRset>> = BTreeMap::new();
    for (name, edit) in names {
        let rrsets: Vec<RRset> = edit
            .after()
            .iter()
            .filter(|r| !r.rdata.is_empty())
            .cloned()
            .collect();
        if rrsets.is_empty() && &name != zone {
            continue;
        }
        for above in name.ancestors().skip(1).take_while(|a| a != zone) {
            nodes.entry(above).or_default();
        }
        nodes.insert(name, rrsets);
    }
    nodes
        .into_iter()
        .map(|(name, rrsets)| NodeWrite { name, rrsets })
        .collect()
}
