//! The control endpoint's HTTP: every connection bounded, purges behind a
//! token.
//!
//! ```text
//!  bind ─► not loopback? warn at start
//!  http::serve_bounded: max_connections at once, a quarter of them per
//!     source prefix (more closed at once, counted), all taken: the oldest
//!     without its request head evicted (control_evictions), accept errors
//!     counted and backed off, the request's head within 2 s, 5 s a request
//!     ─► route (axum):
//!        GET /stats, /metrics, /health: open
//!        POST /purge: `Authorization: Bearer TOKEN` must match control_token
//!          (401 otherwise; 403 while no token is configured)
//! ```
//!
//! A web page open in an administrator's browser can send a simple POST
//! to a loopback address, but not one with an Authorization header
//! without a CORS preflight, which this endpoint never approves.

use super::Control;
use crate::guard::{bump, GUARD};
use crate::http::{serve_bounded, HttpCounters, HttpLimits};
use axum::extract::{Query, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

/// Who may purge, and how many connections are served at once.
#[derive(Clone, Debug)]
pub struct ControlLimits {
    /// The token `POST /purge` must present; `None`: purging is off.
    pub token: Option<String>,
    /// Connections served at once; more are closed at once.
    pub max_connections: usize,
}

impl Default for ControlLimits {
    fn default() -> Self {
        ControlLimits {
            token: None,
            max_connections: 16,
        }
    }
}

/// Time allowed for one whole request and its response.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Time allowed for a request's line and headers to arrive.
const HEADER_TIMEOUT: Duration = Duration::from_secs(2);

/// The warning to give when the endpoint listens beyond this machine.
pub(crate) fn exposure_warning(addr: SocketAddr) -> Option<&'static str> {
    (!addr.ip().is_loopback()).then_some(
        "control endpoint bound to a non-loopback address: anyone who can reach it reads the counters; keep it on loopback or a management network",
    )
}

/// What the routes share.
#[derive(Clone)]
struct Shared {
    control: Arc<Control>,
    token: Arc<Option<String>>,
}

/// Serves the control endpoint on `listener` (bound by the caller before
/// DNS is served, so that a server answering DNS also answers here) until
/// the task is dropped.
pub async fn serve_control(listener: TcpListener, control: Arc<Control>, limits: ControlLimits) {
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    if let Some(warning) = exposure_warning(addr) {
        tracing::warn!(%addr, "{warning}");
    }
    if limits.token.is_none() {
        tracing::info!("control_token unset: POST /purge is refused");
    }
    tracing::info!(%addr, "control endpoint (stats, metrics, purge)");
    let shared = Shared {
        control,
        token: Arc::new(limits.token),
    };
    let http_limits = HttpLimits {
        max_connections: limits.max_connections,
        request_timeout: REQUEST_TIMEOUT,
        header_timeout: HEADER_TIMEOUT,
    };
    let counters = HttpCounters {
        refused: &GUARD.control_refused,
        accept_errors: &GUARD.control_accept_errors,
        evictions: &GUARD.control_evictions,
    };
    serve_bounded(listener, router(shared), http_limits, counters).await;
}

/// The endpoint's routes.
fn router(shared: Shared) -> Router {
    Router::new()
        .route("/stats", get(stats))
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/purge", post(purge))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(shared)
}

/// A response with this status, content type and body.
fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response {
    (status, [(CONTENT_TYPE, content_type)], body).into_response()
}

async fn stats(State(s): State<Shared>) -> Response {
    reply(StatusCode::OK, "application/json", s.control.json())
}

async fn metrics(State(s): State<Shared>) -> Response {
    let jobs = s.control.jobs().await;
    let text = s.control.prometheus(jobs);
    reply(StatusCode::OK, "text/plain; version=0.0.4", text)
}

async fn health(State(s): State<Shared>) -> Response {
    match s.control.health() {
        (true, body) => reply(StatusCode::OK, "text/plain", body),
        (false, body) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", body),
    }
}

async fn purge(
    State(s): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Err(refused) = authorize(&headers, s.token.as_deref()) {
        return refused.into_response();
    }
    let (name, zone) = (query.get("name"), query.get("zone"));
    match s
        .control
        .purge(name.map(String::as_str), zone.map(String::as_str))
    {
        Ok(body) => reply(StatusCode::OK, "application/json", body),
        Err(e) => reply(StatusCode::BAD_REQUEST, "text/plain", e),
    }
}

async fn method_not_allowed() -> Response {
    let text = "method not allowed\n".to_string();
    reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", text)
}

async fn not_found() -> Response {
    let text = "not found: try /stats, /metrics, /health, POST /purge\n".to_string();
    reply(StatusCode::NOT_FOUND, "text/plain", text)
}

/// A refusal: its status and explanation.
type Refusal = (StatusCode, &'static str);

/// Checks `Authorization: Bearer …` against `token`.
fn authorize(headers: &HeaderMap, token: Option<&str>) -> Result<(), Refusal> {
    let Some(token) = token else {
        return Err((
            StatusCode::FORBIDDEN,
            "POST /purge is off: set control_token\n",
        ));
    };
    let given = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        Some(g) if bool::from(g.as_bytes().ct_eq(token.as_bytes())) => Ok(()),
        _ => {
            bump(&GUARD.control_unauthorized);
            Err((
                StatusCode::UNAUTHORIZED,
                "POST /purge needs Authorization: Bearer <control_token>\n",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purges_need_the_token_and_exposure_is_warned() {
        let headers = |auth: &str| {
            let mut h = HeaderMap::new();
            if !auth.is_empty() {
                h.insert(AUTHORIZATION, auth.parse().unwrap());
            }
            h
        };
        assert!(authorize(&headers("Bearer s3cret"), Some("s3cret")).is_ok());
        assert!(authorize(&headers("  Bearer s3cret "), Some("s3cret")).is_ok());
        let missing = authorize(&headers(""), Some("s3cret"));
        assert_eq!(missing.unwrap_err().0, StatusCode::UNAUTHORIZED);
        let wrong = authorize(&headers("Bearer s3cre"), Some("s3cret"));
        assert_eq!(wrong.unwrap_err().0, StatusCode::UNAUTHORIZED);
        let unset = authorize(&headers("Bearer s3cret"), None);
        assert_eq!(unset.unwrap_err().0, StatusCode::FORBIDDEN);
        assert!(exposure_warning("127.0.0.1:8053".parse().unwrap()).is_none());
        assert!(exposure_warning("[::1]:8053".parse().unwrap()).is_none());
        assert!(exposure_warning("0.0.0.0:8053".parse().unwrap()).is_some());
        assert!(exposure_warning("192.0.2.1:8053".parse().unwrap()).is_some());
    }
}
