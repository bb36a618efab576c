//! A PowerDNS-compatible HTTP API (`/api/v1`) for zones and RRsets.
//!
//! ```text
//!  --api-listen ─► http::serve_bounded (64 connections, 16 per source
//!     prefix, all taken: the oldest without its request head evicted,
//!     api_evictions; the request's head within 5 s, 30 s a request)
//!     ─► its source sent too many wrong keys lately? 429, unchecked
//!        (throttle.rs)
//!     ─► X-API-Key must match --api-key (401 otherwise)
//!     ─► GET  /api/v1/servers, /api/v1/servers/localhost        (this file)
//!        GET  /api/v1/servers/localhost/zones[?zone=]           (reads.rs)
//!        GET  …/zones/{id}[?rrsets=false|rrset_name=&rrset_type=] (reads.rs)
//!        POST …/zones, PATCH|DELETE …/zones/{id}                (zones.rs)
//!     ─► RRsets to and from JSON (rrsets.rs), the shapes (json.rs), a
//!        new zone's nodes (new_zone.rs), arrays streamed from a database
//!        cursor (stream.rs)
//!  every write on a task of its own (crate::write_task): run to its end
//!  every error: {"error": "…"} (a 500: an id, the cause in the log)
//!  plain HTTP off loopback: a warning at start (the key travels in clear)
//! ```
//!
//! Every record write is one change-set through `signer::edit::edit_zone`
//! (docs/updates.md, docs/api.md), as for DNS UPDATE and `mongodns-zone`.

pub mod json;
pub mod new_zone;
pub mod reads;
pub mod rrsets;
pub mod stream;
pub mod throttle;
pub mod zones;

use crate::guard::{bump, GUARD};
use crate::http::{serve_bounded, HttpCounters, HttpLimits, Peer};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use backend_mongo::Store;
use json::{ApiError, ServerJson};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use throttle::KeyThrottle;

/// Connections the API serves at once; more are closed at once.
const MAX_CONNECTIONS: usize = 64;

/// Time allowed for one API request and its response.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Time allowed for a request's line and headers to arrive.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// What the API's handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The database.
    pub store: Store,
    /// The key every request must send as `X-API-Key`.
    pub key: Arc<str>,
    /// Wrong keys per source.
    pub throttle: Arc<KeyThrottle>,
}

impl ApiState {
    /// The API on `store`, with `key`.
    pub fn new(store: Store, key: Arc<str>) -> ApiState {
        ApiState {
            store,
            key,
            throttle: Arc::default(),
        }
    }
}

/// The API's routes, behind the key check.
pub fn router(state: ApiState) -> Router {
    let zones = "/api/v1/servers/localhost/zones";
    Router::new()
        .route("/api/v1/servers", get(servers))
        .route("/api/v1/servers/{server}", get(server))
        .route(zones, get(reads::list).post(zones::create))
        .route(
            &format!("{zones}/{{zone_id}}"),
            get(reads::get).patch(zones::patch).delete(zones::delete),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), require_key))
        .with_state(state)
}

/// Serves the API on `listener` until the task is dropped.
pub async fn serve_api(listener: tokio::net::TcpListener, state: ApiState) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "HTTP API (PowerDNS-compatible, /api/v1)");
    }
    let limits = HttpLimits {
        max_connections: MAX_CONNECTIONS,
        request_timeout: REQUEST_TIMEOUT,
        header_timeout: HEADER_TIMEOUT,
    };
    let counters = HttpCounters {
        refused: &GUARD.api_refused,
        accept_errors: &GUARD.api_accept_errors,
        evictions: &GUARD.api_evictions,
    };
    serve_bounded(listener, router(state), limits, counters).await;
}

/// Binds the API's address (a taken port is a start-up error) and starts it.
pub fn start_api(addr: SocketAddr, state: ApiState) -> Result<(), String> {
    if !addr.ip().is_loopback() {
        tracing::warn!(%addr, "the HTTP API listens off loopback in plain HTTP: the X-API-Key travels in clear; keep it on a management network or put a TLS proxy in front");
    }
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| format!("cannot bind the HTTP API {addr}: {e}"))?;
    tokio::spawn(serve_api(listener, state));
    Ok(())
}

/// Refuses a request without the right `X-API-Key`, and one from a
/// source that sent too many wrong keys lately (unchecked).
async fn require_key(State(state): State<ApiState>, request: Request, next: Next) -> Response {
    let source = request.extensions().get::<Peer>().map(|p| p.0.ip());
    let throttle = &state.throttle;
    if source.is_some_and(|ip| throttle.blocked(ip)) {
        bump(&GUARD.api_throttled);
        let message = "Too Many Requests: too many wrong API keys from this source; try later";
        return ApiError::new(StatusCode::TOO_MANY_REQUESTS, message).into_response();
    }
    let given = request
        .headers()
        .get("x-api-key")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if bool::from(given.ct_eq(state.key.as_bytes())) {
        source.inspect(|ip| throttle.succeeded(*ip));
        return next.run(request).await;
    }
    source.inspect(|ip| throttle.failed(*ip));
    bump(&GUARD.api_unauthorized);
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized").into_response()
}

/// This server, as PowerDNS describes itself.
fn this_server() -> ServerJson {
    ServerJson {
        object_type: "Server",
        id: "localhost",
        daemon_type: "authoritative",
        version: concat!("mongodns ", env!("CARGO_PKG_VERSION")),
        url: "/api/v1/servers/localhost",
        zones_url: "/api/v1/servers/localhost/zones{/zone}",
    }
}

/// `GET /api/v1/servers`: this one server.
async fn servers() -> Json<Vec<ServerJson>> {
    Json(vec![this_server()])
}

/// `GET /api/v1/servers/{server}`: only `localhost` exists.
async fn server(
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Json<ServerJson>, ApiError> {
    match id.as_str() {
        "localhost" => Ok(Json(this_server())),
        _ => Err(ApiError::not_found(format!(
            "no server {id:?}: only localhost"
        ))),
    }
}

async fn not_found() -> ApiError {
    ApiError::not_found("Not Found")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
}
