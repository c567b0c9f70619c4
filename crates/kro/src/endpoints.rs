//! The HTTP endpoints long-running commands serve beside their work: Prometheus `/metrics`
//! and the health probes `/healthz` and `/readyz`.

use std::net::SocketAddr;

use anyhow::Context;
use kro_controller::{Metrics, Readiness};

/// Serves `/metrics`, `/healthz` and `/readyz` on `address` until the process ends; returns
/// the address bound (its port chosen when 0 was asked). `/healthz` answers while the process
/// serves; `/readyz` answers what `readiness` says (503 with the reason when not ready).
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve_metrics(
    address: SocketAddr,
    metrics: Metrics,
    readiness: Readiness,
) -> anyhow::Result<SocketAddr> {
    use axum::http::header::CONTENT_TYPE;
    let router = health_routes(readiness).route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [(CONTENT_TYPE, kro_controller::metrics::CONTENT_TYPE)],
                    metrics.encode(),
                )
            }
        }),
    );
    serve(address, router, "metrics").await
}

/// Serves the health probes `/healthz` and `/readyz` on `address` (see [`serve_metrics`]);
/// returns the address bound.
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve_health(address: SocketAddr, readiness: Readiness) -> anyhow::Result<SocketAddr> {
    serve(address, health_routes(readiness), "health probes").await
}

/// `/healthz` answers while the process serves; `/readyz` what `readiness` says.
fn health_routes(readiness: Readiness) -> axum::Router {
    use axum::http::StatusCode;
    axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .route(
            "/readyz",
            axum::routing::get(move || {
                let answer = readiness.check();
                async move {
                    match answer {
                        Ok(()) => (StatusCode::OK, "ok".to_owned()),
                        Err(not_ready) => (StatusCode::SERVICE_UNAVAILABLE, not_ready.to_string()),
                    }
                }
            }),
        )
}

/// Serves `router` on `address` until the process ends; the address bound.
async fn serve(
    address: SocketAddr,
    router: axum::Router,
    what: &'static str,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot serve {what} on {address}"))?;
    let bound = listener
        .local_addr()
        .with_context(|| format!("the {what} address"))?;
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(%error, "the {what} server stopped");
        }
    });
    Ok(bound)
}
