//! The zone reads: the list of zones and one zone with its RRsets, each
//! streamed from a database cursor (stream.rs), with PowerDNS's filters.
//!
//! ```text
//!  GET …/zones             zone_list_stream (name order) ─► [ZoneJson, …]
//!  GET …/zones?zone=NAME   find_zone (one _id read) ─► [ZoneJson] or []
//!  GET …/zones/{id}        find_zone, dnssec_config ─► ZoneJson head, then
//!      rrsets=false        … no "rrsets" at all
//!      rrset_name=N        … the RRsets of N (one _id read of its node)
//!        &rrset_type=T     … only its RRset of type T (needs rrset_name)
//!      (neither)           … version_stream (canonical order) ─► RRsets
//!  bad filter, the root as a zone ─► 422; no such zone ─► 404
//! ```

use super::json::{ApiError, ZoneJson};
use super::rrsets::node_rrsets;
use super::stream::{json_array, to_json, JsonItems};
use super::ApiState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use dns::{Name, RType, ZoneInfo};
use futures::stream::{self, StreamExt};
use std::collections::HashMap;

/// The query string's parameters.
type Params = Query<HashMap<String, String>>;

/// `GET …/zones`: every zone in name order, or only `?zone=NAME`.
pub async fn list(
    State(state): State<ApiState>,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let items: JsonItems = match params.get("zone") {
        Some(text) => {
            let zone = zone_id(text)?;
            let found = state
                .store
                .find_zone(&zone)
                .await
                .map_err(ApiError::internal)?;
            let one = found.map(|info| Ok(vec![to_json(&zone_json(&info))]));
            stream::iter(one).boxed()
        }
        None => {
            let zones = state
                .store
                .zone_list_stream()
                .await
                .map_err(ApiError::internal)?;
            zones
                .map(|z| z.map(|info| vec![to_json(&zone_json(&info))]))
                .boxed()
        }
    };
    Ok(json_array(StatusCode::OK, "[".into(), items, "]"))
}

/// `GET …/zones/{id}`: the zone with its RRsets, as the filters say.
pub async fn get(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let zone = zone_id(&id)?;
    let filter = RRsetFilter::parse(&zone, &params)?;
    zone_response(&state, &zone, StatusCode::OK, &filter).await
}

/// Which RRsets a zone read shows (PowerDNS 4.8's query parameters).
#[derive(Clone, Debug, Default)]
pub struct RRsetFilter {
    /// `rrsets=false`: the zone's fields alone.
    pub none: bool,
    /// `rrset_name`: only this owner's RRsets.
    pub name: Option<Name>,
    /// `rrset_type` (with `rrset_name`): only this type.
    pub rtype: Option<RType>,
}

impl RRsetFilter {
    /// The filter of a zone read's query string; a bad value is a 422.
    fn parse(zone: &Name, params: &HashMap<String, String>) -> Result<RRsetFilter, ApiError> {
        let none = match params.get("rrsets").map(String::as_str) {
            None | Some("true") => false,
            Some("false") => true,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "rrsets={other:?}: true or false"
                )))
            }
        };
        let name = match params.get("rrset_name") {
            Some(text) => Some(
                Name::parse(text, Some(zone))
                    .map_err(|e| ApiError::invalid(format!("bad rrset_name {text:?}: {e}")))?,
            ),
            None => None,
        };
        let rtype = match params.get("rrset_type") {
            None => None,
            Some(_) if name.is_none() => {
                return Err(ApiError::invalid("rrset_type needs rrset_name"))
            }
            Some(text) => Some(
                RType::from_mnemonic(&text.to_ascii_uppercase())
                    .ok_or_else(|| ApiError::invalid(format!("unknown rrset_type {text:?}")))?,
            ),
        };
        Ok(RRsetFilter { none, name, rtype })
    }
}

/// The zone as served, its RRsets streamed after its fields as `filter`
/// says; 404 when there is no such zone.
pub async fn zone_response(
    state: &ApiState,
    zone: &Name,
    status: StatusCode,
    filter: &RRsetFilter,
) -> Result<Response, ApiError> {
    let info = find_zone(state, zone).await?;
    let config = state.store.dnssec_config(zone).await;
    let mut json = zone_json(&info);
    json.dnssec = Some(config.map_err(ApiError::internal)?.secured);
    if filter.none {
        return Ok((status, axum::Json(json)).into_response());
    }
    let fields = to_json(&json);
    // The zone's fields, its closing brace left for after the RRsets.
    let head = format!("{},\"rrsets\":[", &fields[..fields.len() - 1]);
    let items = rrset_items(state, &info, filter).await?;
    Ok(json_array(status, head, items, "]}"))
}

/// The RRsets `filter` asks for, as the cursor (or one point read)
/// delivers their nodes.
async fn rrset_items(
    state: &ApiState,
    info: &ZoneInfo,
    filter: &RRsetFilter,
) -> Result<JsonItems, ApiError> {
    let only = filter.rtype;
    let json = move |node: &backend_mongo::dnssec_store::FullNode| {
        node_rrsets(node, only)
            .iter()
            .map(to_json)
            .collect::<Vec<_>>()
    };
    let Some(name) = &filter.name else {
        let nodes = state.store.version_stream(&info.apex, info.ver).await;
        let nodes = nodes.map_err(ApiError::internal)?;
        return Ok(nodes.map(move |n| n.map(|n| json(&n))).boxed());
    };
    let node = match name.is_subdomain_of(&info.apex) {
        true => state.store.read_full_node(&info.apex, info.ver, name).await,
        false => Ok(None),
    };
    let node = node.map_err(ApiError::internal)?;
    Ok(stream::iter(node.map(|n| Ok(json(&n)))).boxed())
}

/// The zone as served; 404 when there is none.
pub async fn find_zone(state: &ApiState, zone: &Name) -> Result<ZoneInfo, ApiError> {
    state
        .store
        .find_zone(zone)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| no_such_zone(&zone.to_string()))
}

/// 404 for `zone`, in PowerDNS's words.
pub fn no_such_zone(zone: &str) -> ApiError {
    ApiError::not_found(format!("Could not find domain '{zone}'"))
}

/// A zone id or name (`example.org.` or `example.org`) as a name; the
/// root is no zone the API manages.
pub fn zone_id(text: &str) -> Result<Name, ApiError> {
    let absolute = match text.ends_with('.') {
        true => text.to_string(),
        false => format!("{text}."),
    };
    let name = Name::parse(&absolute, None)
        .map_err(|e| ApiError::invalid(format!("bad zone {text:?}: {e}")))?;
    match name.is_root() {
        true => Err(ApiError::invalid(
            "the root zone \".\" cannot be managed through the API: name a zone below it",
        )),
        false => Ok(name),
    }
}

/// A zone as listed.
pub fn zone_json(info: &ZoneInfo) -> ZoneJson {
    let name = info.apex.to_string();
    ZoneJson {
        id: name.clone(),
        url: format!("/api/v1/servers/localhost/zones/{name}"),
        name,
        object_type: "Zone",
        kind: "Native",
        serial: info.serial,
        edited_serial: info.serial,
        masters: Vec::new(),
        dnssec: None,
    }
}
