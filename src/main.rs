//! The `opsdeck` binary: parse the CLI, set up logging, dispatch. What each verb does lives in the
//! library (`opsdeck::cli`, `opsdeck::demo`, `opsdeck::backups`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use opsdeck::config::Settings;

#[derive(Parser)]
#[command(
    name = "opsdeck",
    version,
    about = "Self-hosted control plane for fleets of AI agents",
    after_help = "Every option can also be set with the environment variable shown next to it. \
                  Options go before the subcommand: opsdeck --port 8080 serve"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    settings: Settings,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service (the default).
    Serve {
        /// Start a simulated agent gateway in-process and, into an empty database, seed a demo fleet.
        #[arg(long)]
        demo: bool,
    },
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
        out: PathBuf,
    },
    /// Replace the database with the backup FILE (service stopped). A file that is not a complete
    /// OpsDeck database is refused and the current database is left untouched.
    Restore {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Manage users with the service stopped.
    User {
        #[command(subcommand)]
        action: UserCommand,
    },
}

#[derive(Subcommand)]
enum UserCommand {
    /// Set a new password for NAME and sign that user out everywhere (service stopped).
    ResetPassword {
        /// The username.
        name: String,
        /// The new password (at least 12 characters). Default: a generated one, printed once.
        #[arg(long)]
        password: Option<String>,
    },
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => fail(&opsdeck::cli::clap_error_line(&Cli::command(), &e)),
    };
    let config = cli.settings.validate().unwrap_or_else(|e| fail(&e));
    if let Err(e) = opsdeck::cli::init_logging(config.log_format, &config.log_filter) {
        fail(&e);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => fail(&format!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(run(cli.command.unwrap_or(Command::Serve { demo: false }), config));
    // Whatever task is left lets go of its handles (the database closes) before the process exits.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => fail(&e),
    }
}

/// One line on stderr, exit code 2: for anything that stops the start.
fn fail(message: &str) -> ! {
    eprintln!("opsdeck: {message}");
    std::process::exit(2);
}

async fn run(command: Command, config: opsdeck::Config) -> Result<i32, String> {
    match command {
        Command::Serve { demo } => serve(config, demo).await,
        Command::Healthcheck { url } => {
            // Against the local service, the Host header is one the host allowlist accepts.
            let host = url.is_none().then(|| opsdeck::cli::healthcheck_host(&config)).flatten();
            let url = url.unwrap_or_else(|| format!("http://127.0.0.1:{}", config.port));
            Ok(match opsdeck::cli::healthcheck(&url, host.as_deref()).await {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("healthcheck: {e}");
                    1
                }
            })
        }
        Command::GatewaySim { port, host, token } => opsdeck::gateways::sim::run(&host, port, token)
            .await
            .map(|()| 0)
            .map_err(|e| format!("gateway simulator: cannot listen on {host}:{port}: {e}")),
        Command::Backup { out } => Ok(match opsdeck::backups::backup_file(&config.db_path, &out) {
            Ok(size) => {
                println!("backup written to {} ({size} bytes)", out.display());
                0
            }
            Err(e) => {
                eprintln!("opsdeck: backup failed: {e}");
                1
            }
        }),
        Command::Restore { file } => Ok(match opsdeck::backups::restore_file(&file, &config.db_path) {
            Ok(size) => {
                println!("restored {} into {} ({size} bytes)", file.display(), config.db_path.display());
                0
            }
            Err(e) => {
                eprintln!("opsdeck: restore failed: {e}");
                1
            }
        }),
        Command::User { action: UserCommand::ResetPassword { name, password } } => {
            Ok(match opsdeck::cli::reset_password(&config, &name, password).await {
                Ok(done) => {
                    match &done.generated {
                        Some(p) => println!("new password for '{}':\n\n    {p}\n", done.username),
                        None => println!("password of '{}' changed", done.username),
                    }
                    println!("signed out of {} session(s)", done.sessions_destroyed);
                    0
                }
                Err(e) => {
                    eprintln!("opsdeck: reset-password failed: {e}");
                    1
                }
            })
        }
        Command::Openapi => {
            println!("{}", opsdeck::cli::openapi());
            Ok(0)
        }
    }
}

async fn serve(config: opsdeck::Config, demo: bool) -> Result<i32, String> {
    let (host, port) = (config.hostname.clone(), config.port);
    let app = opsdeck::build(config).await?;
    if demo {
        let report = opsdeck::demo::start(&app.state).await?;
        println!("{report}");
    }
    let (acceptor, addr) =
        opsdeck::bind(&host, port).await.map_err(|e| format!("cannot listen on {host}:{port}: {e}"))?;
    let shown = if addr.ip().is_unspecified() { format!("localhost:{}", addr.port()) } else { addr.to_string() };
    tracing::info!("OpsDeck listening on http://{addr}");
    if let Some(password) = &app.generated_admin_password {
        println!(
            "\nFirst run: created admin user '{}' with password\n\n    {password}\n\nSign in at http://{shown}/ — this password is shown only once.\n",
            app.state.config.admin_user
        );
    }
    opsdeck::serve(app, acceptor, opsdeck::cli::shutdown_signal()).await;
    tracing::info!("stopped");
    Ok(0)
}
