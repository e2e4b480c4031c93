//! The `opsdeck` binary: parse the CLI, set up logging, dispatch.

use clap::{Parser, Subcommand};
use opsdeck::config::Settings;

#[derive(Parser)]
#[command(name = "opsdeck", version, about = "Self-hosted control plane for fleets of AI agents")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    settings: Settings,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service (the default).
    Serve,
    /// Exit 0 when the service answers `GET /healthz` (for container and systemd health checks).
    Healthcheck {
        /// Base URL of the service (default: http://127.0.0.1:<PORT>).
        #[arg(long)]
        url: Option<String>,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Run a simulated agent gateway (agents, live sessions, control and spawn) for demos and tests.
    GatewaySim {
        /// Port to listen on.
        #[arg(long, default_value_t = 18789)]
        port: u16,
        /// Address to bind.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Require this bearer token.
        #[arg(long)]
        token: Option<String>,
    },
    /// Write a consistent copy of the database to FILE (service stopped; online: POST /api/backup).
    Backup {
        /// Where to write the backup.
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
    },
    /// Replace the database with the backup FILE (service stopped). A file that is not a complete
    /// OpsDeck database is refused and the current database is left untouched.
    Restore {
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
    },
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,salvo_core=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => fail(&format!("cannot start the async runtime: {e}")),
    };
    let code = runtime.block_on(run(cli));
    std::process::exit(code);
}

fn fail(message: &str) -> ! {
    eprintln!("opsdeck: {message}");
    std::process::exit(2);
}

async fn run(cli: Cli) -> i32 {
    let config = match cli.settings.validate() {
        Ok(c) => c,
        Err(e) => fail(&e),
    };
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(config).await,
        Command::Healthcheck { url } => {
            healthcheck(url.unwrap_or_else(|| format!("http://127.0.0.1:{}", config.port))).await
        }
        Command::GatewaySim { port, host, token } => match opsdeck::gateways::sim::run(&host, port, token).await {
            Ok(()) => 0,
            Err(e) => fail(&format!("gateway simulator: cannot listen on {host}:{port}: {e}")),
        },
        Command::Backup { out } => match opsdeck::backups::backup_file(&config.db_path, &out) {
            Ok(size) => {
                println!("backup written to {} ({size} bytes)", out.display());
                0
            }
            Err(e) => {
                eprintln!("opsdeck: backup failed: {e}");
                1
            }
        },
        Command::Restore { file } => match opsdeck::backups::restore_file(&file, &config.db_path) {
            Ok(size) => {
                println!("restored {} into {} ({size} bytes)", file.display(), config.db_path.display());
                0
            }
            Err(e) => {
                eprintln!("opsdeck: restore failed: {e}");
                1
            }
        },
        Command::Openapi => {
            let dir = match tempdir_config(config) {
                Ok(c) => c,
                Err(e) => fail(&e),
            };
            match opsdeck::build(dir).await {
                Ok(app) => {
                    println!("{}", app.state.openapi_json.get().cloned().unwrap_or_default());
                    0
                }
                Err(e) => fail(&e),
            }
        }
    }
}

/// `openapi` builds the app against a throw-away database so it never touches real data.
fn tempdir_config(mut config: opsdeck::Config) -> Result<opsdeck::Config, String> {
    let dir = std::env::temp_dir().join(format!("opsdeck-openapi-{}", std::process::id()));
    config.db_path = dir.join("svc.db");
    config.data_dir = dir;
    config.admin_pass = Some("openapi-only-password".into());
    Ok(config)
}

async fn serve(config: opsdeck::Config) -> i32 {
    let (host, port) = (config.hostname.clone(), config.port);
    let app = match opsdeck::build(config).await {
        Ok(app) => app,
        Err(e) => fail(&e),
    };
    let (acceptor, addr) = match opsdeck::bind(&host, port).await {
        Ok(bound) => bound,
        Err(e) => fail(&format!("cannot listen on {host}:{port}: {e}")),
    };
    let shown = if addr.ip().is_unspecified() { format!("localhost:{}", addr.port()) } else { addr.to_string() };
    tracing::info!("OpsDeck listening on http://{addr}");
    if let Some(password) = &app.generated_admin_password {
        println!(
            "\nFirst run: created admin user '{}' with password\n\n    {password}\n\nSign in at http://{shown}/ — this password is shown only once.\n",
            app.state.config.admin_user
        );
    }
    opsdeck::serve(app, acceptor, shutdown_signal()).await;
    tracing::info!("stopped");
    0
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// Minimal HTTP/1.1 GET over a plain TCP socket: no client library needed for a health probe.
async fn healthcheck(base: String) -> i32 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Some(rest) = base.strip_prefix("http://") else {
        eprintln!("healthcheck: only http:// URLs are supported");
        return 1;
    };
    let authority = rest.split('/').next().unwrap_or(rest).to_string();
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(&authority).await?;
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&response).into_owned())
    };
    match tokio::time::timeout(std::time::Duration::from_secs(5), attempt).await {
        Ok(Ok(text)) if text.starts_with("HTTP/1.1 200") => 0,
        Ok(Ok(text)) => {
            eprintln!("healthcheck: unhealthy: {}", text.lines().next().unwrap_or(""));
            1
        }
        Ok(Err(e)) => {
            eprintln!("healthcheck: {e}");
            1
        }
        Err(_) => {
            eprintln!("healthcheck: timed out");
            1
        }
    }
}
