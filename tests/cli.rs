//! The real `opsdeck` binary: `--help`, start-up errors, `user reset-password`, `openapi`,
//! `healthcheck`, `serve --demo`, log formats, and graceful shutdown on SIGTERM / SIGINT.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_opsdeck");
const PASS: &str = "cli-admin-password-1";
const KEY: &str = "cli-test-api-key-0123";

/// The binary with a clean environment: only what the test sets (and a HOME inside `dir`).
fn opsdeck(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("HOME", dir.join("home"))
        .env("SVC_DATA_DIR", dir.join("data"))
        .env("AGW_HOME", dir.join("agw"))
        .env("SVC_LOCAL_SESSIONS_DIR", dir.join("no-sessions"))
        .env("SVC_ARGON2_MEMORY_KIB", "8")
        .env("SVC_ARGON2_ITERATIONS", "1")
        .env("NODE_ENV", "development")
        .env("SVC_DISABLE_RATE_LIMIT", "true")
        .env("AUTH_PASS", PASS)
        .env("API_KEY", KEY)
        .env("AGW_GATEWAY_PORT", "1")
        .env("HOSTNAME", "127.0.0.1");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running `opsdeck serve`, killed if a test ends without stopping it.
struct Server {
    child: Child,
    port: u16,
    stderr: PathBuf,
    stdout: PathBuf,
}

impl Server {
    fn start(dir: &Path, extra_env: &[(&str, &str)], args: &[&str]) -> Server {
        let port = free_port();
        std::fs::create_dir_all(dir).unwrap();
        let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
        let stderr = dir.join(format!("stderr-{n}.log"));
        let stdout = dir.join(format!("stdout-{n}.log"));
        let mut cmd = opsdeck(dir);
        cmd.env("PORT", port.to_string());
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let child = cmd
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("spawn opsdeck");
        let mut server = Server { child, port, stderr, stdout };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("opsdeck exited early ({status}): {}", self.stderr_text());
            }
            // Any HTTP answer means it is up (a production host allowlist may refuse this Host).
            if http(self.port, "GET", "/healthz", &[], None).is_ok_and(|(s, _)| s != 0) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("opsdeck did not answer /healthz: {}", self.stderr_text());
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn stdout_text(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status().unwrap();
        assert!(status.success());
    }

    fn wait_exit(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "opsdeck did not exit: {}", self.stderr_text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 client: (status, body).
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        request.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = text(&response);
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

fn json_of(body: &str) -> Value {
    // Bodies may be chunked; take the JSON object inside.
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map(|e| e + 1).unwrap_or(body.len());
    serde_json::from_str(&body[start..end]).unwrap_or(Value::Null)
}

fn api(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (status, text) = http(port, method, path, &[("x-api-key", KEY)], body.as_ref()).expect("request");
    (status, json_of(&text))
}

/// Logs in and returns the session cookie value.
fn login(port: u16, password: &str) -> Option<String> {
    let body = json!({"username": "admin", "password": password});
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let payload = body.to_string();
    let request = format!(
        "POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{payload}",
        payload.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: svc-session="))
        .map(|v| v.split(';').next().unwrap().to_string())
}

/// Opens the database with a repair callback: true when redb had to repair it (not closed cleanly).
fn needed_repair(db: &Path) -> bool {
    let repaired = Arc::new(AtomicBool::new(false));
    let flag = repaired.clone();
    let opened = redb::Database::builder()
        .set_repair_callback(move |_| flag.store(true, Ordering::SeqCst))
        .open(db)
        .expect("the database opens");
    drop(opened);
    repaired.load(Ordering::SeqCst)
}

#[test]
fn help_lists_every_setting_with_its_environment_variable_and_default() {
    let dir = TempDir::new().unwrap();
    let out = run(opsdeck(dir.path()).arg("--help"));
    assert!(out.status.success());
    let help = text(&out.stdout);
    // Each option's entry runs from its `--flag` line to the next one.
    let entries: Vec<&str> = help.split("\n      --").skip(1).collect();
    let mut envs = Vec::new();
    for entry in &entries {
        let Some(env) = entry.split("[env: ").nth(1) else { continue };
        let name: String =
            env.chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        let flat = entry.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("[default: ") || flat.contains("Default: "), "{name} has no documented default: {flat}");
        let doc = flat.split_once(' ').map(|(_, d)| d).unwrap_or("");
        assert!(!doc.starts_with('['), "{name} has no description: {flat}");
        envs.push(name);
    }
    for expected in [
        "PORT",
        "HOSTNAME",
        "NODE_ENV",
        "SVC_ENV",
        "SVC_DATA_DIR",
        "SVC_DB_PATH",
        "AUTH_USER",
        "AUTH_PASS",
        "AUTH_PASS_B64",
        "API_KEY",
        "SVC_ALLOWED_HOSTS",
        "SVC_COOKIE_SECURE",
        "SVC_RATE_LIMIT_PER_MINUTE",
        "SVC_DISABLE_RATE_LIMIT",
        "SVC_TRUSTED_PROXIES",
        "AGW_GATEWAY_HOST",
        "AGW_GATEWAY_PORT",
        "AGW_GATEWAY_TOKEN",
        "AGW_HOME",
        "AGW_LOG_DIR",
        "SVC_PRICING_PATH",
        "SVC_METRICS_PUBLIC",
        "SVC_LOG_FORMAT",
        "RUST_LOG",
        "SVC_SHUTDOWN_TIMEOUT_SECS",
        "SVC_RETAIN_TOKEN_USAGE_DAYS",
        "SVC_WEBHOOK_MAX_RETRIES",
    ] {
        assert!(envs.iter().any(|e| e == expected), "{expected} missing from --help: {envs:?}");
    }
    assert!(envs.len() >= 40, "{} settings listed", envs.len());
    // Secrets set in the environment never show in the help text.
    assert!(!help.contains(PASS) && !help.contains(KEY), "a secret value leaked into --help");
}

#[test]
fn config_errors_stop_the_start_with_one_clear_line() {
    let dir = TempDir::new().unwrap();
    let a_file = dir.path().join("a-file");
    std::fs::write(&a_file, "not a directory").unwrap();
    let under_file = a_file.join("data");
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, "this is not a database, it only has a database's name").unwrap();
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![("PORT", "eighty")], "environment variable PORT"),
        (vec![("PORT", "70000")], "70000"),
        (vec![("SVC_DATA_DIR", a_file.to_str().unwrap())], "SVC_DATA_DIR"),
        (vec![("SVC_DATA_DIR", under_file.to_str().unwrap())], "SVC_DATA_DIR"),
        (vec![("SVC_DATA_DIR", "/proc/opsdeck-cannot-exist")], "SVC_DATA_DIR: cannot create"),
        (vec![("SVC_DB_PATH", garbage.to_str().unwrap())], "cannot open database"),
        (vec![("AUTH_PASS_B64", "***not base64***")], "AUTH_PASS_B64"),
        (vec![("AUTH_PASS", "short")], "at least 12 characters"),
        (vec![("SVC_LOG_FORMAT", "xml")], "SVC_LOG_FORMAT"),
        (vec![("NODE_ENV", "staging")], "NODE_ENV"),
    ];
    for (env, expected) in cases {
        let mut cmd = opsdeck(dir.path());
        cmd.env("PORT", free_port().to_string());
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let out = run(cmd.arg("serve"));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{env:?}: exactly one line, got {stderr:?}");
        assert!(lines[0].starts_with("opsdeck: ") && lines[0].contains(expected), "{env:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{env:?}: {stderr}");
    }
}

#[test]
fn a_port_in_use_is_one_line_too_and_the_database_stays_clean() {
    let dir = TempDir::new().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = run(opsdeck(dir.path()).env("PORT", &port));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.starts_with("opsdeck: cannot listen on 127.0.0.1:") && last.contains(&port), "{stderr}");
    assert!(!needed_repair(&dir.path().join("data/svc.db")), "the database was closed before exiting");
}

#[test]
fn reset_password_sets_a_new_one_and_signs_the_user_out() {
    let dir = TempDir::new().unwrap();
    let mut server = Server::start(dir.path(), &[], &[]);
    let old_session = login(server.port, PASS).expect("logged in");
    // The service holds the database: the reset refuses.
    let busy = run(opsdeck(dir.path()).args(["user", "reset-password", "admin", "--password", "a-new-password-42"]));
    assert_eq!(busy.status.code(), Some(1));
    assert!(text(&busy.stderr).contains("in use; stop the service first"), "{}", text(&busy.stderr));
    server.signal("TERM");
    assert!(server.wait_exit(Duration::from_secs(15)).success());

    let unknown = run(opsdeck(dir.path()).args(["user", "reset-password", "ghost", "--password", "a-new-password-42"]));
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(text(&unknown.stderr).trim(), "opsdeck: reset-password failed: no user named 'ghost'");
    let short = run(opsdeck(dir.path()).args(["user", "reset-password", "admin", "--password", "short"]));
    assert_eq!(short.status.code(), Some(1));
    assert!(text(&short.stderr).contains("at least 12 characters"));

    let given = run(opsdeck(dir.path()).args(["user", "reset-password", "admin", "--password", "a-new-password-42"]));
    assert!(given.status.success(), "{}", text(&given.stderr));
    assert!(text(&given.stdout).contains("signed out of 1 session(s)"), "{}", text(&given.stdout));

    let generated = run(opsdeck(dir.path()).args(["user", "reset-password", "admin"]));
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let stdout = text(&generated.stdout);
    let new_password =
        stdout.lines().map(str::trim).find(|l| l.len() == 24).expect("the generated password").to_string();

    let server = Server::start(dir.path(), &[], &[]);
    let (status, _) =
        http(server.port, "GET", "/api/auth/me", &[("cookie", &format!("svc-session={old_session}"))], None).unwrap();
    assert_eq!(status, 401, "the old session is gone");
    assert!(login(server.port, PASS).is_none(), "the old password no longer works");
    assert!(login(server.port, "a-new-password-42").is_none(), "the first reset was replaced");
    assert!(login(server.port, &new_password).is_some(), "the generated password works");
    let (_, audit) = api(server.port, "GET", "/api/audit?action=user_password_reset", None);
    let events = audit["events"].as_array().expect("audit events");
    assert_eq!(events.len(), 2, "{audit}");
    assert_eq!(events[0]["actor"], "cli");
    assert_eq!(events[0]["detail"]["username"], "admin");
}

#[test]
fn openapi_prints_the_document_and_removes_its_temporary_database() {
    let dir = TempDir::new().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = run(opsdeck(dir.path()).env("TMPDIR", &tmp).arg("openapi"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/tasks"].is_object());
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the temporary directory was removed");
    assert!(!dir.path().join("data").exists(), "the real data directory was never touched");
}

#[test]
fn healthcheck_exit_codes() {
    let dir = TempDir::new().unwrap();
    let server = Server::start(dir.path(), &[], &[]);
    let up = run(opsdeck(dir.path()).env("PORT", server.port.to_string()).arg("healthcheck"));
    assert!(up.status.success(), "{}", text(&up.stderr));
    // Production with an allowlist that does not name 127.0.0.1: the probe still passes.
    let strict = [("NODE_ENV", "production"), ("SVC_ALLOWED_HOSTS", "opsdeck.lan.example,*.lan.example")];
    let prod = Server::start(dir.path().join("prod").as_path(), &strict, &[]);
    let (status, _) = http(prod.port, "GET", "/healthz", &[], None).unwrap();
    assert_eq!(status, 403, "the allowlist applies");
    let mut probe = opsdeck(&dir.path().join("prod"));
    let up = run(probe.envs(strict).env("PORT", prod.port.to_string()).arg("healthcheck"));
    assert!(up.status.success(), "{}", text(&up.stderr));
    let url = format!("http://127.0.0.1:{}", free_port());
    let down = run(opsdeck(dir.path()).args(["healthcheck", "--url", &url]));
    assert_eq!(down.status.code(), Some(1));
    assert!(text(&down.stderr).starts_with("healthcheck: "));
}

#[test]
fn serve_demo_shows_a_living_fleet() {
    let dir = TempDir::new().unwrap();
    let server = Server::start(dir.path(), &[], &["serve", "--demo"]);
    assert!(server.stdout_text().contains("Demo mode: simulated agent gateway on http://127.0.0.1:"));
    let (status, agents) = api(server.port, "GET", "/api/agents", None);
    assert_eq!(status, 200);
    assert_eq!(agents["total"], 6, "{agents}");
    let (_, gateways) = api(server.port, "GET", "/api/gateways", None);
    assert_eq!(gateways["gateways"][0]["status"], "online", "{gateways}");
}

#[test]
fn logs_are_human_by_default_and_json_lines_on_request() {
    let dir = TempDir::new().unwrap();
    let mut human = Server::start(dir.path(), &[], &[]);
    api(human.port, "GET", "/api/tasks/77", None);
    human.signal("TERM");
    assert!(human.wait_exit(Duration::from_secs(15)).success());
    let log = human.stderr_text();
    let line = log.lines().find(|l| l.contains("route=/api/tasks/{id}")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("method=GET") && line.contains("status=404") && line.contains("latency_ms="), "{line}");

    let mut json = Server::start(dir.path(), &[("SVC_LOG_FORMAT", "json")], &[]);
    api(json.port, "GET", "/api/tasks/77", None);
    json.signal("TERM");
    assert!(json.wait_exit(Duration::from_secs(15)).success());
    let log = json.stderr_text();
    let lines: Vec<Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}"))).collect();
    let request = lines.iter().find(|l| l["route"] == "/api/tasks/{id}").unwrap_or_else(|| panic!("{log}"));
    assert_eq!(request["method"], "GET");
    assert_eq!(request["status"], 404);
    assert!(request["latency_ms"].as_f64().is_some());
    assert_eq!(request["target"], "opsdeck::http");
    assert!(lines.iter().any(|l| l["message"] == "database closed"), "{log}");
}

/// A fake agent gateway that answers `/health` after `delay`; reports each accepted connection.
fn slow_gateway(delay: Duration) -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = tx.send(());
                std::thread::sleep(delay);
                let body = r#"{"status":"ok"}"#;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
            });
        }
    });
    (port, rx)
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_0_with_the_database_closed() {
    let dir = TempDir::new().unwrap();
    let (gateway_port, accepted) = slow_gateway(Duration::from_millis(1500));
    let gateway_port = gateway_port.to_string();
    let mut server = Server::start(dir.path(), &[("AGW_GATEWAY_PORT", &gateway_port)], &[]);
    let port = server.port;
    let in_flight = std::thread::spawn(move || api(port, "POST", "/api/gateways/health", Some(json!({}))));
    accepted.recv_timeout(Duration::from_secs(10)).expect("the health check reached the gateway");
    server.signal("TERM");
    std::thread::sleep(Duration::from_millis(300));
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "no new connections once shutdown began");
    let (status, report) = in_flight.join().unwrap();
    assert_eq!(status, 200, "the request in flight was answered: {report}");
    assert_eq!(report["healthy"], true, "{report}");
    let exit = server.wait_exit(Duration::from_secs(15));
    assert_eq!(exit.code(), Some(0), "{}", server.stderr_text());
    let log = server.stderr_text();
    assert!(log.contains("database closed"), "{log}");
    assert!(!needed_repair(&dir.path().join("data/svc.db")), "closed cleanly: no repair needed");
}

#[test]
fn sigint_exits_0_and_the_data_is_there_after_a_restart() {
    let dir = TempDir::new().unwrap();
    let mut server = Server::start(dir.path(), &[], &[]);
    let (status, _) = api(server.port, "POST", "/api/tasks", Some(json!({"title": "survives a restart"})));
    assert_eq!(status, 200);
    server.signal("INT");
    assert_eq!(server.wait_exit(Duration::from_secs(15)).code(), Some(0), "{}", server.stderr_text());
    assert!(!needed_repair(&dir.path().join("data/svc.db")));
    let server = Server::start(dir.path(), &[], &[]);
    let (_, tasks) = api(server.port, "GET", "/api/tasks", None);
    assert_eq!(tasks["tasks"][0]["title"], "survives a restart");
}

#[test]
fn kill_9_leaves_a_database_that_needs_repair_so_the_clean_close_checks_mean_something() {
    let dir = TempDir::new().unwrap();
    let mut server = Server::start(dir.path(), &[], &[]);
    server.signal("KILL");
    server.wait_exit(Duration::from_secs(5));
    assert!(needed_repair(&dir.path().join("data/svc.db")), "redb reports an unclean close");
}

#[test]
fn sigterm_lets_a_webhook_attempt_in_flight_finish_and_record() {
    let dir = TempDir::new().unwrap();
    let (receiver_port, accepted) = slow_gateway(Duration::from_millis(1500));
    let mut server = Server::start(dir.path(), &[], &[]);
    let url = format!("http://127.0.0.1:{receiver_port}/hook");
    let (status, hook) = api(
        server.port,
        "POST",
        "/api/webhooks",
        Some(json!({"name": "slow", "url": url, "events": ["agent.status_change"]})),
    );
    assert_eq!(status, 200, "{hook}");
    let (status, agent) = api(server.port, "POST", "/api/agents", Some(json!({"name": "mover", "role": "dev"})));
    assert_eq!(status, 200, "{agent}");
    let id = agent["agent"]["id"].as_u64().unwrap();
    let (status, _) = api(server.port, "PUT", &format!("/api/agents/{id}"), Some(json!({"status": "online"})));
    assert_eq!(status, 200);
    accepted.recv_timeout(Duration::from_secs(10)).expect("the sender started the attempt");
    server.signal("TERM");
    assert_eq!(server.wait_exit(Duration::from_secs(15)).code(), Some(0), "{}", server.stderr_text());

    let server = Server::start(dir.path(), &[], &[]);
    let (_, deliveries) = api(server.port, "GET", &format!("/api/webhooks/deliveries?webhook_id={}", hook["id"]), None);
    let first = &deliveries["deliveries"][0];
    assert_eq!(first["status_code"], 200, "the attempt finished and was recorded: {deliveries}");
}
