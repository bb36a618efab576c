//! The zone endpoints that write: create, patch RRsets, delete (the reads:
//! reads.rs).
//!
//! ```text
//!  POST   …/zones            edits checked ─► applied in memory to the new
//!                            apex (new_zone.rs) ─► signer::create, one
//!                            replace, on its own task ─► 201 + the zone
//!                            read back (reads.rs)
//!  PATCH  …/zones/{id}       edits checked ─► signer::edit::apply on its
//!                            own task (one change-set, whole or nothing;
//!                            run to its end if the client leaves) ─► 204, or 422
//!  DELETE …/zones/{id}       Store::delete_zone (tombstone) ─► 204; nodes
//!                            deleted in the background after 3 s
//! ```

use super::json::{parse_body, ApiError, RRsetChange, RRsetPatch, ZoneCreate};
use super::new_zone::zone_nodes;
use super::reads::{find_zone, no_such_zone, zone_id, zone_response, RRsetFilter};
use super::rrsets::{edits_for, refused_edits};
use super::ApiState;
use crate::backend::StoreError;
use crate::write_task::to_end;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use dns::edit::ChangeSet;
use dns::edit::RecordEdit;
use dns::Name;
use signer::create::{create_zone, today_serial, CreateError, NewZone};
use signer::SignError;

/// TTL of the SOA and NS records of a zone created without them.
const APEX_TTL: u32 = 3600;

/// `POST …/zones`: a new zone, with its name servers and any RRsets,
/// written in one replace on a task of its own (served whole or not at
/// all, whether the client stays or not).
pub async fn create(State(state): State<ApiState>, body: Bytes) -> Result<Response, ApiError> {
    let request: ZoneCreate = parse_body(&body)?;
    check_kind(request.kind.as_deref())?;
    let zone = zone_id(&request.name)?;
    let edits = edits_for(&zone, &request.rrsets)?;
    let apex = new_zone(&zone, &request)?
        .apex_node()
        .map_err(create_error)?;
    let nodes = zone_nodes(&zone, apex, &edits)?;
    let (store, name) = (state.store.clone(), zone.clone());
    to_end(async move { create_zone(&store, &name, &nodes).await })
        .await
        .map_err(ApiError::internal)?
        .map_err(create_error)?;
    zone_response(&state, &zone, StatusCode::CREATED, &RRsetFilter::default()).await
}

/// `PATCH …/zones/{id}`: the RRset changes as one change-set, applied on
/// a task of its own (a client that leaves never cuts it half-way).
pub async fn patch(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let zone = zone_id(&id)?;
    find_zone(&state, &zone).await?;
    let request: RRsetPatch = parse_body(&body)?;
    let edits = edits_for(&zone, &request.rrsets)?;
    to_end(async move { apply(&state, &zone, &edits).await })
        .await
        .map_err(ApiError::internal)??;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE …/zones/{id}`: the zone is no longer served (a tombstone at a
/// new generation, its keys deleted); its nodes are deleted in the
/// background after a grace of 3 s. 204.
pub async fn delete(
    State(state): State<ApiState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let zone = zone_id(&id)?;
    find_zone(&state, &zone).await?;
    match state.store.delete_zone(&zone).await {
        Ok(_) => {}
        Err(StoreError::NoSuchZone(z)) => return Err(no_such_zone(&z)),
        Err(e) => return Err(ApiError::internal(e)),
    }
    let store = state.store.clone();
    tokio::spawn(async move {
        if let Err(e) = store
            .collect_old_versions(&zone, DELETE_GRACE, &|_| {})
            .await
        {
            tracing::warn!(%zone, error = %e, "the deleted zone's nodes were not all deleted (mongodns-sign cleanup finishes)");
        }
    });
    Ok(StatusCode::NO_CONTENT)
}

/// How long a deleted zone's nodes stay readable for servers finishing
/// what they read.
const DELETE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Only native zones: the database replicates them.
fn check_kind(kind: Option<&str>) -> Result<(), ApiError> {
    match kind {
        None => Ok(()),
        Some(k) if k.eq_ignore_ascii_case("native") || k.eq_ignore_ascii_case("master") => Ok(()),
        Some(k) => Err(ApiError::invalid(format!(
            "zone kind {k:?} is not supported: Native or Master"
        ))),
    }
}

/// The new zone's apex: the name servers given, else those of an apex NS
/// RRset among the RRsets.
fn new_zone(zone: &Name, request: &ZoneCreate) -> Result<NewZone, ApiError> {
    let mut texts: Vec<&str> = request.nameservers.iter().map(String::as_str).collect();
    if texts.is_empty() {
        texts = apex_ns_contents(zone, &request.rrsets);
    }
    let mut nameservers = Vec::new();
    for text in texts {
        nameservers.push(
            Name::parse(text, Some(zone))
                .map_err(|e| ApiError::invalid(format!("bad name server {text:?}: {e}")))?,
        );
    }
    let rname = Name::parse("hostmaster", Some(zone)).map_err(ApiError::invalid_from)?;
    Ok(NewZone {
        apex: zone.clone(),
        nameservers,
        rname,
        ttl: APEX_TTL,
        serial: today_serial(),
    })
}

/// The contents of the apex NS RRset among `rrsets`, if there is one.
fn apex_ns_contents<'a>(zone: &Name, rrsets: &'a [RRsetChange]) -> Vec<&'a str> {
    rrsets
        .iter()
        .filter(|r| r.rtype.eq_ignore_ascii_case("NS"))
        .filter(|r| Name::parse(&r.name, Some(zone)).is_ok_and(|n| &n == zone))
        .flat_map(|r| r.records.iter().map(|rec| rec.content.as_str()))
        .collect()
}

/// One change-set; the edits RFC 2136's rules refused make it a 422.
async fn apply(state: &ApiState, zone: &Name, edits: &[RecordEdit]) -> Result<(), ApiError> {
    if edits.is_empty() {
        return Ok(());
    }
    // A PATCH applies whole or not at all, as PowerDNS's does.
    let whole = ChangeSet::new(zone.clone(), edits.to_vec()).whole();
    let summary = signer::edit::apply(&state.store, &whole)
        .await
        .map_err(|e| match e {
            SignError::Store(StoreError::NoSuchZone(z)) => no_such_zone(&z),
            SignError::Store(StoreError::TooLarge(why)) => ApiError::invalid(why),
            e => ApiError::internal(e),
        })?;
    refused_edits(edits, &summary)
}

fn create_error(e: CreateError) -> ApiError {
    match e {
        CreateError::ZoneExists(_) => ApiError::new(StatusCode::CONFLICT, e.to_string()),
        CreateError::NoNameservers(_) => ApiError::invalid(e.to_string()),
        CreateError::Store(e) => ApiError::internal(e),
    }
}
