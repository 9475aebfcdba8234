//! The HTTP surface: axum routes under `/api`, wire-compatible with the original's API. This is
//! the only crate that knows the wire shapes; it turns engine values into JSON and engine errors
//! into `_tag`ged bodies.

mod error;
mod routes;
mod wire;

use std::time::Duration;

use axum::Router;
use executor_engine::Engine;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use error::ApiError;

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// The whole application: `/api` routes and their middleware.
pub fn app(engine: Engine) -> Router {
    routes::router(engine)
}

/// Serves until `shutdown` is cancelled, then lets in-flight requests finish for at most
/// `drain`. Accepted sockets get TCP_NODELAY: small JSON replies must not wait on Nagle.
pub async fn serve(
    listener: TcpListener,
    engine: Engine,
    shutdown: CancellationToken,
    drain: Duration,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let app = app(engine);
    let signal = shutdown.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move { signal.cancelled().await });
    let server = tokio::spawn(async move { server.await });
    shutdown.cancelled().await;
    match tokio::time::timeout(drain, server).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(std::io::Error::other(join)),
        Err(_) => {
            tracing::warn!(?drain, "in-flight requests did not finish in time; closing them");
            Ok(())
        }
    }
}
