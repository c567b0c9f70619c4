//! Serving the routes on a listener, as `axum::serve` with graceful shutdown does, but with
//! hyper's per-connection buffers bounded.
//!
//! `axum::serve` keeps hyper's defaults: a connection may queue about 400 KiB of response
//! before hyper stops polling the body. A watch whose client stops reading then holds that
//! much besides the watch's own buffer ([`crate::handlers::watch::WATCH_BUFFER_BYTES`]), so a
//! thousand stalled watches held about 1 GiB. Here both HTTP/1.1 and HTTP/2 connections queue
//! at most [`CONNECTION_BUFFER_BYTES`].

use std::convert::Infallible;
use std::fmt::Debug;
use std::pin::pin;

use axum::Router;
use axum::body::Body;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::sync::watch;

/// The most a connection queues for its client beyond what the kernel's socket buffer takes
/// (hyper's `max_buf_size` for HTTP/1.1, `max_send_buf_size` for HTTP/2).
pub const CONNECTION_BUFFER_BYTES: usize = 64 * 1024;

/// Serves `app` on `listener` until `signal` completes, then stops accepting, asks every
/// connection to finish its requests in flight and waits for them.
pub(crate) async fn serve<L>(
    mut listener: L,
    app: Router,
    signal: impl Future<Output = ()> + Send + 'static,
) where
    L: Listener,
    L::Addr: Debug,
{
    // Every connection task holds a receiver of `stop` and a clone of `closed`'s receiver:
    // the signal drops `stop`'s only receiver kept here, and the server waits until no
    // connection holds `closed`.
    let (stop, stop_receiver) = watch::channel(());
    tokio::spawn(async move {
        signal.await;
        drop(stop_receiver);
    });
    let (closed, closed_receiver) = watch::channel(());
    loop {
        let (io, peer) = tokio::select! {
            connection = listener.accept() => connection,
            () = stop.closed() => break,
        };
        tracing::trace!(?peer, "connection accepted");
        let stop = stop.clone();
        let closed_receiver = closed_receiver.clone();
        let app = app.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let mut app = app.clone();
                async move {
                    let answer: Result<_, Infallible> =
                        tower::Service::call(&mut app, request.map(Body::new)).await;
                    answer
                }
            });
            let mut builder = Builder::new(TokioExecutor::new());
            builder.http1().max_buf_size(CONNECTION_BUFFER_BYTES);
            builder
                .http2()
                .enable_connect_protocol()
                .max_send_buf_size(CONNECTION_BUFFER_BYTES);
            let mut connection =
                pin!(builder.serve_connection_with_upgrades(TokioIo::new(io), service));
            let mut stopping = pin!(stop.closed());
            let mut asked_to_stop = false;
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(error) = served {
                            tracing::trace!(%error, ?peer, "connection ended with an error");
                        }
                        break;
                    }
                    () = &mut stopping, if !asked_to_stop => {
                        asked_to_stop = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(closed_receiver);
        });
    }
    drop(closed_receiver);
    drop(listener);
    closed.closed().await;
}
