//! The control endpoint's HTTP: every connection bounded, purges behind a
//! token.
//!
//! ```text
//!  bind ─► not loopback? warn at start
//!  accept ── error (EMFILE, …) ─► count, log at most once a second, wait
//!                                 100 ms, keep accepting
//!     ─► a permit of max_connections? ── no ──► close at once (counted)
//!     ─► one request, 5 s in all ─► route:
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
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

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

/// The warning to give when the endpoint listens beyond this machine.
pub(crate) fn exposure_warning(addr: SocketAddr) -> Option<&'static str> {
    (!addr.ip().is_loopback()).then_some(
        "control endpoint bound to a non-loopback address: anyone who can reach it reads the counters; keep it on loopback or a management network",
    )
}

/// Serves the control endpoint on `addr` until the task is dropped.
pub async fn serve_control(
    addr: SocketAddr,
    control: Arc<Control>,
    limits: ControlLimits,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    if let Some(warning) = exposure_warning(addr) {
        tracing::warn!(%addr, "{warning}");
    }
    if limits.token.is_none() {
        tracing::info!("control_token unset: POST /purge is refused");
    }
    tracing::info!(%addr, "control endpoint (stats, metrics, purge)");
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let token = Arc::new(limits.token);
    let mut last_logged: Option<Instant> = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                bump(&GUARD.control_accept_errors);
                if last_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    tracing::warn!(error = %e, "control accept error; backing off and continuing");
                    last_logged = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            bump(&GUARD.control_refused);
            continue; // dropping the stream closes it
        };
        let (control, token) = (control.clone(), token.clone());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(REQUEST_TIMEOUT, handle(stream, control, &token)).await;
            drop(permit);
        });
    }
}

fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// Status, content type and body of a response.
type Response = (&'static str, &'static str, String);

/// Checks the request head's `Authorization: Bearer …` against `token`.
fn authorize(head: &str, token: Option<&str>) -> Result<(), Response> {
    let Some(token) = token else {
        return Err((
            "403 Forbidden",
            "text/plain",
            "POST /purge is off: set control_token\n".into(),
        ));
    };
    let given = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .and_then(|(_, v)| v.trim().strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        Some(g) if same_bytes(g.as_bytes(), token.as_bytes()) => Ok(()),
        _ => {
            bump(&GUARD.control_unauthorized);
            Err((
                "401 Unauthorized",
                "text/plain",
                "POST /purge needs Authorization: Bearer <control_token>\n".into(),
            ))
        }
    }
}

/// Equal slices, compared in time that does not depend on where they differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn handle(
    mut stream: TcpStream,
    control: Arc<Control>,
    token: &Option<String>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 4096];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") && len < buf.len() {
        let n = stream.read(&mut buf[len..]).await?;
        if n == 0 {
            break;
        }
        len += n;
    }
    let head = String::from_utf8_lossy(&buf[..len]);
    let (status, content_type, body) = route(&head, &control, token.as_deref()).await;
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

async fn route(head: &str, control: &Control, token: Option<&str>) -> Response {
    let mut parts = head.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match (method, path) {
        ("GET", "/stats") => ("200 OK", "application/json", control.json()),
        ("GET", "/metrics") => {
            let jobs = control.jobs().await;
            (
                "200 OK",
                "text/plain; version=0.0.4",
                control.prometheus(&jobs),
            )
        }
        ("GET", "/health") => match control.health() {
            (true, body) => ("200 OK", "text/plain", body),
            (false, body) => ("503 Service Unavailable", "text/plain", body),
        },
        ("POST", "/purge") => {
            if let Err(refused) = authorize(head, token) {
                return refused;
            }
            match control.purge(query_param(query, "name"), query_param(query, "zone")) {
                Ok(body) => ("200 OK", "application/json", body),
                Err(e) => ("400 Bad Request", "text/plain", e),
            }
        }
        (_, "/stats" | "/metrics" | "/health" | "/purge") => (
            "405 Method Not Allowed",
            "text/plain",
            "method not allowed\n".into(),
        ),
        _ => (
            "404 Not Found",
            "text/plain",
            "not found: try /stats, /metrics, /health, POST /purge\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purges_need_the_token_and_exposure_is_warned() {
        let head = |auth: &str| format!("POST /purge HTTP/1.1\r\nHost: x\r\n{auth}\r\n\r\n");
        assert!(authorize(&head("Authorization: Bearer s3cret"), Some("s3cret")).is_ok());
        assert!(authorize(&head("authorization:   Bearer s3cret "), Some("s3cret")).is_ok());
        assert_eq!(
            authorize(&head(""), Some("s3cret")).unwrap_err().0,
            "401 Unauthorized"
        );
        let wrong = authorize(&head("Authorization: Bearer s3cre"), Some("s3cret"));
        assert_eq!(wrong.unwrap_err().0, "401 Unauthorized");
        let unset = authorize(&head("Authorization: Bearer s3cret"), None);
        assert_eq!(unset.unwrap_err().0, "403 Forbidden");
        assert!(exposure_warning("127.0.0.1:8053".parse().unwrap()).is_none());
        assert!(exposure_warning("[::1]:8053".parse().unwrap()).is_none());
        assert!(exposure_warning("0.0.0.0:8053".parse().unwrap()).is_some());
        assert!(exposure_warning("192.0.2.1:8053".parse().unwrap()).is_some());
    }
}
