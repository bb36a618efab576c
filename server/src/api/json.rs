//! The JSON shapes of the PowerDNS Authoritative API v1, and its errors.
//!
//! ```text
//!  request bodies:  ZoneCreate { name, kind, nameservers, rrsets }
//!                   RRsetPatch { rrsets: [RRsetChange { name, type, ttl,
//!                                changetype, records: [Record] }] }
//!  responses:       ServerJson, ZoneJson (its rrsets: [RRsetJson] are
//!                   streamed after it, stream.rs)
//!  errors:          ApiError ─► status + {"error": "…"}; a 500 gives a
//!                   short id, the cause goes to the log
//! ```

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One record of an RRset: its rdata in presentation format.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// The rdata, as in a zone file.
    pub content: String,
    /// Disabled records are not supported: always false when read.
    #[serde(default)]
    pub disabled: bool,
}

/// An RRset as read (`GET …/zones/{id}`).
#[derive(Debug, Serialize)]
pub struct RRsetJson {
    /// The owner name, absolute.
    pub name: String,
    /// The type mnemonic.
    #[serde(rename = "type")]
    pub rtype: String,
    /// The TTL.
    pub ttl: u32,
    /// The records.
    pub records: Vec<Record>,
    /// Comments are not stored: always empty.
    pub comments: Vec<serde_json::Value>,
}

/// An RRset to change (`PATCH`) or to create with a zone (`POST`).
#[derive(Debug, Deserialize)]
pub struct RRsetChange {
    /// The owner name, absolute (or relative to the zone).
    pub name: String,
    /// The type mnemonic.
    #[serde(rename = "type")]
    pub rtype: String,
    /// The TTL; needed by REPLACE.
    #[serde(default)]
    pub ttl: Option<u32>,
    /// `REPLACE` or `DELETE`; absent in a zone creation (REPLACE).
    #[serde(default)]
    pub changetype: Option<String>,
    /// The records (REPLACE).
    #[serde(default)]
    pub records: Vec<Record>,
}

/// The body of `PATCH …/zones/{id}`.
#[derive(Debug, Deserialize)]
pub struct RRsetPatch {
    /// The RRsets to change, as one change-set.
    pub rrsets: Vec<RRsetChange>,
}

/// The body of `POST …/zones`.
#[derive(Debug, Deserialize)]
pub struct ZoneCreate {
    /// The zone's name.
    pub name: String,
    /// `Native` or `Master` (absent: Native).
    #[serde(default)]
    pub kind: Option<String>,
    /// The apex name servers.
    #[serde(default)]
    pub nameservers: Vec<String>,
    /// RRsets to create with the zone.
    #[serde(default)]
    pub rrsets: Vec<RRsetChange>,
}

/// `GET /api/v1/servers/localhost`.
#[derive(Debug, Serialize)]
pub struct ServerJson {
    /// Always "Server".
    #[serde(rename = "type")]
    pub object_type: &'static str,
    /// Always "localhost".
    pub id: &'static str,
    /// Always "authoritative".
    pub daemon_type: &'static str,
    /// The mongodns version.
    pub version: &'static str,
    /// This server's URL.
    pub url: &'static str,
    /// The zones' URL template.
    pub zones_url: &'static str,
}

/// A zone, listed or read (then with its RRsets).
#[derive(Debug, Serialize)]
pub struct ZoneJson {
    /// The zone id: its name with a final dot.
    pub id: String,
    /// The zone's name with a final dot.
    pub name: String,
    /// Always "Zone".
    #[serde(rename = "type")]
    pub object_type: &'static str,
    /// The zone's URL.
    pub url: String,
    /// Always "Native": zones are replicated by the database.
    pub kind: &'static str,
    /// The SOA serial served.
    pub serial: u32,
    /// The same serial (no separate edited serial here).
    pub edited_serial: u32,
    /// Never any: zones are not transferred in.
    pub masters: Vec<String>,
    /// Whether the zone is signed (when the zone itself is read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dnssec: Option<bool>,
}

/// An error: its status and `{"error": "…"}`.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// 422: the data is invalid (PowerDNS's status for bad input).
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    /// 422 from any error that explains itself.
    pub fn invalid_from(error: impl std::fmt::Display) -> ApiError {
        ApiError::invalid(error.to_string())
    }

    /// 404: no such zone or resource.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 500: the database failed. The cause is logged with a short id; the
    /// client gets the id alone (database errors name hosts and internals).
    pub fn internal(error: impl std::fmt::Display) -> ApiError {
        let id = error_id();
        tracing::warn!(%id, error = %error, "HTTP API request failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error (error id {id}: see the server's log)"),
        )
    }

    /// An error with this status.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        (self.status, Json(body)).into_response()
    }
}

/// A short random id that ties a client's error reply to the server's log.
pub fn error_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:08x}", h.finish() as u32)
}

/// A request body parsed as JSON; malformed: 400, wrong shape: 422.
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => ApiError::invalid(format!("bad request body: {e}")),
        _ => ApiError::new(StatusCode::BAD_REQUEST, format!("bad JSON: {e}")),
    })
}
