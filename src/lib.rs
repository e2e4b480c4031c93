//! OpsDeck: a self-hosted control plane for fleets of AI agents.

pub mod activity;
pub mod agents;
pub mod alerts;
pub mod app;
pub mod audit;
pub mod backups;
pub mod config;
pub mod docs;
pub mod error;
pub mod events;
pub mod gateways;
pub mod http;
pub mod logs;
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
use std::time::Duration;

use salvo::conn::TcpListener;
use salvo::conn::tcp::TcpAcceptor;
use salvo::prelude::*;

pub use app::{App, build};
pub use config::Config;

/// Serves `app` on an already-bound listener until `shutdown` completes, then stops gracefully
/// (in-flight requests get up to 10 s).
pub async fn serve<A, F>(app: App, acceptor: A, shutdown: F)
where
    A: salvo::conn::Acceptor + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let server = Server::new(acceptor);
    let handle = server.handle();
    tokio::spawn(async move {
        shutdown.await;
        handle.stop_graceful(Duration::from_secs(10));
    });
    server.serve(app.service()).await;
}

/// Binds `host:port` (port 0 picks a free one) and returns the acceptor with its local address.
pub async fn bind(host: &str, port: u16) -> std::io::Result<(TcpAcceptor, std::net::SocketAddr)> {
    let acceptor = TcpListener::new((host.to_string(), port))
        .try_bind()
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let addr = acceptor.local_addr()?;
    Ok((acceptor, addr))
}
