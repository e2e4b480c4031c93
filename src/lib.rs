//! OpsDeck: a self-hosted control plane for fleets of AI agents.

pub mod activity;
pub mod agents;
pub mod alerts;
pub mod app;
pub mod audit;
pub mod background;
pub mod backups;
pub mod cli;
pub mod config;
pub mod demo;
pub mod docs;
pub mod error;
pub mod events;
pub mod fuzzing;
pub mod gateways;
pub mod http;
pub mod logs;
pub mod metrics;
pub mod notifications;
pub mod scheduler;
pub mod sessions;
pub mod settings;
pub mod store;
pub mod tasks;
pub mod tokens;
pub mod ui;
pub mod users;
pub mod webhooks;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use salvo::conn::TcpListener;
use salvo::conn::tcp::TcpAcceptor;
use salvo::prelude::*;

pub use app::{App, build};
pub use config::Config;

/// Serves `app` on an already-bound listener until `shutdown` completes, then stops gracefully:
/// no new connections; in-flight requests get `SVC_SHUTDOWN_TIMEOUT_SECS` (live event streams end at
/// once); background tasks (the webhook sender finishing its attempts in flight) get as long again and
/// are aborted after that; then the last handle on the database is dropped, which closes it.
pub async fn serve<A, F>(app: App, acceptor: A, shutdown: F)
where
    A: salvo::conn::Acceptor + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let state = app.state.clone();
    let server = Server::new(ClosingAcceptor::new(acceptor, state.background.subscribe()));
    let handle = server.handle();
    let grace = state.config.shutdown_timeout;
    let watcher = {
        let state = state.clone();
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!(grace_secs = grace.as_secs(), "shutting down: finishing in-flight requests");
            state.background.begin_stop();
            handle.stop_graceful(grace);
        })
    };
    server.serve(app.service()).await;
    // A server that stopped by itself (not through `shutdown`) still stops the background work.
    watcher.abort();
    let aborted = state.background.stop(grace).await;
    if !aborted.is_empty() {
        tracing::warn!(tasks = ?aborted, "background tasks did not stop in time and were aborted");
    }
    let database = state.store.downgrade();
    drop(state);
    drop(app);
    // Whatever still holds the database (a response body being streamed) lets go within moments.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while database.strong_count() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if database.strong_count() == 0 {
        tracing::info!("database closed");
    } else {
        tracing::debug!("database still in use; it closes when its last user ends");
    }
}

/// An acceptor that closes its listening socket as soon as shutdown begins, so new connections are
/// refused (a load balancer moves on at once) while the requests in flight finish.
pub struct ClosingAcceptor<A> {
    inner: Arc<tokio::sync::Mutex<Option<A>>>,
    holdings: Vec<salvo::conn::Holding>,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl<A: salvo::conn::Acceptor + 'static> ClosingAcceptor<A> {
    /// Must be called inside the runtime: a task drops the listener when `stop` turns true (or its
    /// sender goes), also when the server no longer polls `accept`.
    pub fn new(inner: A, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        let holdings = inner.holdings().to_vec();
        let inner = Arc::new(tokio::sync::Mutex::new(Some(inner)));
        let (slot, mut watch) = (inner.clone(), stop.clone());
        tokio::spawn(async move {
            let _ = watch.wait_for(|stopping| *stopping).await;
            slot.lock().await.take();
        });
        Self { inner, holdings, stop }
    }
}

impl<A: salvo::conn::Acceptor + 'static> salvo::conn::Acceptor for ClosingAcceptor<A> {
    type Coupler = A::Coupler;
    type Stream = A::Stream;

    fn holdings(&self) -> &[salvo::conn::Holding] {
        &self.holdings
    }

    async fn accept(
        &mut self,
        fuse_policy: Option<salvo::fuse::ArcFusePolicy>,
    ) -> std::io::Result<salvo::conn::Accepted<Self::Coupler, Self::Stream>> {
        let mut stop = self.stop.clone();
        let mut slot = self.inner.lock().await;
        let Some(inner) = slot.as_mut() else {
            drop(slot);
            return std::future::pending().await;
        };
        tokio::select! {
            accepted = inner.accept(fuse_policy) => accepted,
            () = async { let _ = stop.wait_for(|stopping| *stopping).await; } => {
                slot.take();
                drop(slot);
                std::future::pending().await
            }
        }
    }
}

/// Binds `host:port` (port 0 picks a free one) and returns the acceptor with its local address.
pub async fn bind(host: &str, port: u16) -> std::io::Result<(TcpAcceptor, std::net::SocketAddr)> {
    let acceptor = TcpListener::new((host.to_string(), port))
        .try_bind()
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux. Without it a response written in
    // two parts (head, then a large body) can wait ~40 ms for the client's delayed ACK (Nagle).
    socket2::SockRef::from(acceptor.inner()).set_tcp_nodelay(true)?;
    let addr = acceptor.local_addr()?;
    Ok((acceptor, addr))
}
