//! The service's control endpoint: `/metrics` (Prometheus text) and
//! `/health`.
//!
//! ```text
//!  GET /metrics ─► Status::metrics()      GET /health ─► 200 "ok"
//! ```

use super::Status;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

/// Serves the control endpoint on `listener` until the process ends.
pub async fn serve_control(listener: TcpListener, status: Status) {
    let router = Router::new()
        .route(
            "/metrics",
            get(move || {
                let status = status.clone();
                async move {
                    (
                        [("content-type", "text/plain; version=0.0.4")],
                        status.metrics(),
                    )
                }
            }),
        )
        .route("/health", get(|| async { "ok\n" }));
    if let Err(e) = axum::serve(listener, router).await {
        tracing::error!(error = %e, "the control endpoint stopped");
    }
}
