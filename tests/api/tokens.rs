use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

fn today() -> String {
    opsdeck::tokens::date_of_day(now_ms() / DAY)
}

async fn record(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/api/tokens", &Auth::ApiKey, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["success"], true);
    reply.body["record"].clone()
}

async fn get_ok(app: &TestApp, query: &str) -> Value {
    let reply = app.get(&format!("/api/tokens?{query}"), &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{query}: {}", reply.text);
    reply.body
}

fn assert_validation(reply: &Reply, detail: &str) {
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.text);
    assert_eq!(reply.error(), "Validation failed", "{}", reply.text);
    let details: Vec<&str> = reply.body["details"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    assert!(details.iter().any(|d| d.starts_with(detail)), "{detail:?} in {details:?}");
}

/// TokenStats for `count` records with `tokens` tokens costing `cost` USD.
fn stats(count: u64, tokens: u64, cost: f64) -> Value {
    json!({
        "totalTokens": tokens,
        "totalCost": cost,
        "requestCount": count,
        "avgTokensPerRequest": (tokens as f64 / count as f64).round() as u64,
        "avgCostPerRequest": cost / count as f64,
    })
}

/// Five records spread over 40 days, returned with their timestamps (newest first):
/// A 10 min ago alice:s1 sonnet 1000+500 = 4.50; B 2 h ago alice:s1 opus 200+100 = 4.50;
/// C 3 d ago bob:s2 groq 8b 10000+10000 = 1.00; D 10 d ago bob:s3 ollama 5000+0 = 0.00;
/// E 40 d ago carol:s4 unknown 700+300 = 1.00.
async fn seed(app: &TestApp) -> [u64; 5] {
    let now = now_ms();
    let ts = [now - 10 * MINUTE, now - 2 * HOUR, now - 3 * DAY, now - 10 * DAY, now - 40 * DAY];
    let rows = [
        ("claude-sonnet-4", "alice:s1", 1000, 500),
        ("claude-opus-4-5", "alice:s1", 200, 100),
        ("groq/llama-3.1-8b-instant", "bob:s2", 10000, 10000),
        ("ollama/llama3", "bob:s3", 5000, 0),
        ("unknown-model", "carol:s4", 700, 300),
    ];
    // Inserted oldest first, the way an import would.
    for (i, (model, session, input, output)) in rows.iter().enumerate().rev() {
        let mut body = json!({"model": model, "sessionId": session, "inputTokens": input, "outputTokens": output,
                              "timestamp": ts[i]});
        if i == 0 {
            body["duration"] = json!(1234.5);
        }
        if i == 1 {
            body["operation"] = json!("embedding");
        }
        record(app, body).await;
    }
    ts
}

#[tokio::test]
async fn token_routes_enforce_roles_and_are_documented() {
    let app = spawn_app().await;
    let roles = app.role_sessions().await;
    assert_min_role(&app, &roles, Method::GET, "/api/tokens", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, "/api/tokens?action=stats", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, "/api/tokens?action=export&format=csv", None, "viewer").await;
    assert_min_role(&app, &roles, Method::GET, "/api/tokens?action=pricing", None, "viewer").await;
    let body = json!({"model": "m", "sessionId": "a:b", "inputTokens": 1, "outputTokens": 1});
    assert_min_role(&app, &roles, Method::POST, "/api/tokens", Some(body), "operator").await;

    let doc = app.get("/api/docs", &Auth::None).await;
    let path = &doc.body["paths"]["/api/tokens"];
    assert!(path["get"]["tags"].as_array().unwrap().contains(&json!("tokens")), "{path}");
    assert!(path["post"]["requestBody"].is_object(), "{path}");
    let params: Vec<&str> =
        path["get"]["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(params, ["action", "timeframe", "format", "limit", "offset"]);
    for schema in ["TokenUsageRecord", "TokenStats", "RecordUsageBody", "StatsReply", "AgentCostsReply"] {
        assert!(doc.body["components"]["schemas"][schema].is_object(), "{schema} documented");
    }
}

#[tokio::test]
async fn post_records_and_costs_usage() {
    let app = spawn_app().await;
    let (_, operator) = app.user_with_role("ops", "operator").await;
    let before = now_ms();
    let reply = app
        .post(
            "/api/tokens",
            &operator,
            json!({"model": " claude-sonnet-4 ", "sessionId": "alice:chat:7", "inputTokens": 10, "outputTokens": 5}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let r = &reply.body["record"];
    assert_eq!(reply.body["success"], true);
    assert_eq!(r["model"], "claude-sonnet-4");
    assert_eq!(r["sessionId"], "alice:chat:7");
    assert_eq!(r["agentName"], "alice");
    assert_eq!(r["inputTokens"], 10);
    assert_eq!(r["outputTokens"], 5);
    assert_eq!(r["totalTokens"], 15);
    assert_eq!(r["cost"], 0.045); // 15 / 1000 × 3.00
    assert_eq!(r["operation"], "chat_completion");
    assert!(r.get("duration").is_none());
    let ts = r["timestamp"].as_u64().unwrap();
    assert!(ts >= before && ts <= now_ms(), "{ts}");
    assert!(r["id"].as_str().is_some_and(|id| !id.is_empty()));

    let imported = record(
        &app,
        json!({"model": "claude-opus-4-5", "sessionId": "solo", "inputTokens": 0, "outputTokens": 0,
               "operation": "import", "duration": 250, "timestamp": 1_700_000_000_000u64}),
    )
    .await;
    assert_eq!(imported["timestamp"], 1_700_000_000_000u64);
    assert_eq!(imported["agentName"], "solo");
    assert_eq!(imported["operation"], "import");
    assert_eq!(imported["duration"], 250.0);
    assert_eq!(imported["cost"], 0.0);
    assert_ne!(imported["id"], r["id"]);

    let list = get_ok(&app, "action=list").await;
    assert_eq!(list["total"], 2);
    assert_eq!(list["usage"][0], *r, "the stored record is the one returned");
    assert_eq!(list["usage"][1], imported);
}

#[tokio::test]
async fn pricing_matches_exact_prefixed_partial_ollama_and_unknown() {
    let app = spawn_app().await;
    // 600 + 400 tokens: the cost equals the rate per 1,000 tokens.
    for (model, rate) in [
        ("claude-opus-4-5", 15.0),
        ("anthropic/claude-opus-4-5", 15.0),
        ("anthropic/claude-sonnet-4-20250514", 3.0),
        ("claude-3-5-haiku", 0.25),
        ("groq/llama-3.3-70b-versatile", 0.59),
        ("minimax/minimax-m2.1", 0.30),
        ("moonshot/kimi-k2.5", 1.0),
        ("groq/llama-3.1-8b-instant", 0.05),
        // A provider-prefixed name matches a short entry; a short name matches a prefixed entry.
        ("anthropic/claude-sonnet-4", 3.0),
        ("bedrock/claude-3-5-haiku", 0.25),
        ("llama-3.3-70b-versatile", 0.59),
        ("kimi-k2.5", 1.0),
        ("claude-sonnet-4-5-20250929", 3.0),
        ("Claude-Opus-4-5", 15.0),
        ("ollama/qwen2.5:7b", 0.0),
        ("ollama/llama-3.3-70b-versatile", 0.0),
        ("mystery-model", 1.0),
    ] {
        let r =
            record(&app, json!({"model": model, "sessionId": "p:1", "inputTokens": 600, "outputTokens": 400})).await;
        assert_eq!(r["cost"].as_f64(), Some(rate), "{model}");
    }

    let pricing = get_ok(&app, "action=pricing").await;
    assert_eq!(pricing["default_rate"], 1.0);
    assert_eq!(pricing["pricing"]["claude-opus-4-5"], 15.0);
    assert_eq!(pricing["pricing"]["anthropic/claude-3-5-haiku-latest"], 0.25);
    assert_eq!(pricing["pricing"]["ollama/*"], 0.0);
    assert_eq!(pricing["pricing"].as_object().unwrap().len(), 11);
}

#[tokio::test]
async fn operators_override_pricing_with_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pricing.json");
    std::fs::write(&path, r#"{"mystery-model": 2.5, "claude-sonnet-4": 4, "lmstudio/*": 0, "*": 0.5}"#).unwrap();
    let app = spawn_app_with(&["--pricing-path", path.to_str().unwrap()]).await;
    for (model, rate) in [
        ("mystery-model", 2.5),
        ("claude-sonnet-4", 4.0),
        ("openrouter/claude-sonnet-4", 4.0),
        ("claude-opus-4-5", 15.0),
        ("lmstudio/qwen", 0.0),
        ("never-heard-of-it", 0.5),
    ] {
        let r =
            record(&app, json!({"model": model, "sessionId": "p:1", "inputTokens": 500, "outputTokens": 500})).await;
        assert_eq!(r["cost"].as_f64(), Some(rate), "{model}");
    }
    let pricing = get_ok(&app, "action=pricing").await;
    assert_eq!(pricing["default_rate"], 0.5);
    assert_eq!(pricing["pricing"]["mystery-model"], 2.5);
    assert_eq!(pricing["pricing"]["lmstudio/*"], 0.0);
    assert_eq!(pricing["pricing"]["claude-sonnet-4"], 4.0);

    // A bad file stops the start with a message naming the variable.
    let settings = |p: &std::path::Path| {
        opsdeck::config::Settings::from_args(["--pricing-path", p.to_str().unwrap()]).unwrap().validate()
    };
    std::fs::write(&path, r#"{"claude-sonnet-4": -3}"#).unwrap();
    let err = settings(&path).expect_err("a negative rate is rejected");
    assert!(err.starts_with("SVC_PRICING_PATH: ") && err.contains("claude-sonnet-4"), "{err}");
    std::fs::write(&path, "not json").unwrap();
    assert!(settings(&path).err().unwrap().contains("not valid JSON"));
    assert!(settings(&dir.path().join("missing.json")).err().unwrap().contains("cannot read"));
}

#[tokio::test]
async fn list_is_newest_first_per_timeframe_with_limit_and_offset() {
    let app = spawn_app().await;
    let ts = seed(&app).await;
    let all = get_ok(&app, "").await;
    assert_eq!(all["timeframe"], "all");
    assert_eq!(all["total"], 5);
    let times: Vec<u64> = all["usage"].as_array().unwrap().iter().map(|r| r["timestamp"].as_u64().unwrap()).collect();
    assert_eq!(times, ts);
    let a = &all["usage"][0];
    assert_eq!(a["duration"], 1234.5);
    assert_eq!(a["cost"], 4.5);
    assert_eq!(all["usage"][1]["operation"], "embedding");
    assert_eq!(all["usage"][4]["agentName"], "carol");

    for (timeframe, n) in [("hour", 1), ("day", 2), ("week", 3), ("month", 4), ("all", 5)] {
        let list = get_ok(&app, &format!("action=list&timeframe={timeframe}")).await;
        assert_eq!(list["timeframe"], timeframe);
        assert_eq!(list["total"], n, "{timeframe}");
        assert_eq!(list["usage"].as_array().unwrap().len(), n as usize, "{timeframe}");
    }
    let page = get_ok(&app, "limit=2&offset=1").await;
    let times: Vec<u64> = page["usage"].as_array().unwrap().iter().map(|r| r["timestamp"].as_u64().unwrap()).collect();
    assert_eq!(times, [ts[1], ts[2]]);
    assert_eq!(page["total"], 5);
    assert_eq!(get_ok(&app, "limit=500").await["usage"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn list_holds_at_most_100_records() {
    let app = spawn_app().await;
    let now = now_ms();
    for i in 0..105u64 {
        record(
            &app,
            json!({"model": "m", "sessionId": "x:1", "inputTokens": i, "outputTokens": 0, "timestamp": now - i}),
        )
        .await;
    }
    let list = get_ok(&app, "limit=1000").await;
    assert_eq!(list["total"], 105);
    assert_eq!(list["usage"].as_array().unwrap().len(), 100);
    assert_eq!(list["usage"][0]["inputTokens"], 0);
    assert_eq!(list["usage"][99]["inputTokens"], 99);
    assert_eq!(get_ok(&app, "offset=100").await["usage"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn stats_per_timeframe_are_exact() {
    let app = spawn_app().await;
    seed(&app).await;
    for (timeframe, count, tokens, cost) in [
        ("hour", 1, 1500, 4.5),
        ("day", 2, 1800, 9.0),
        ("week", 3, 21800, 10.0),
        ("month", 4, 26800, 10.0),
        ("all", 5, 27800, 11.0),
    ] {
        let s = get_ok(&app, &format!("action=stats&timeframe={timeframe}")).await;
        assert_eq!(s["summary"], stats(count, tokens, cost), "{timeframe}");
        assert_eq!(s["recordCount"], count, "{timeframe}");
        assert_eq!(s["timeframe"], timeframe);
    }
    let all = get_ok(&app, "action=stats").await;
    assert_eq!(all["summary"]["avgTokensPerRequest"], 5560);
    assert_eq!(all["summary"]["avgCostPerRequest"], 2.2);
    assert_eq!(
        all["models"],
        json!({
            "claude-sonnet-4": stats(1, 1500, 4.5),
            "claude-opus-4-5": stats(1, 300, 4.5),
            "groq/llama-3.1-8b-instant": stats(1, 20000, 1.0),
            "ollama/llama3": stats(1, 5000, 0.0),
            "unknown-model": stats(1, 1000, 1.0),
        })
    );
    assert_eq!(
        all["sessions"],
        json!({
            "alice:s1": stats(2, 1800, 9.0),
            "bob:s2": stats(1, 20000, 1.0),
            "bob:s3": stats(1, 5000, 0.0),
            "carol:s4": stats(1, 1000, 1.0),
        })
    );
    assert_eq!(
        all["agents"],
        json!({"alice": stats(2, 1800, 9.0), "bob": stats(2, 25000, 1.0), "carol": stats(1, 1000, 1.0)})
    );
    let week = get_ok(&app, "action=stats&timeframe=week").await;
    assert_eq!(week["summary"]["avgTokensPerRequest"], 7267); // 21800 / 3 rounded
    assert_eq!(week["agents"], json!({"alice": stats(2, 1800, 9.0), "bob": stats(1, 20000, 1.0)}));
    assert_eq!(week["sessions"].as_object().unwrap().len(), 2);

    let empty = spawn_app().await;
    let s = get_ok(&empty, "action=stats").await;
    assert_eq!(
        s["summary"],
        json!({"totalTokens": 0, "totalCost": 0.0, "requestCount": 0, "avgTokensPerRequest": 0, "avgCostPerRequest": 0.0})
    );
    assert_eq!(s["models"], json!({}));
    assert_eq!(s["recordCount"], 0);
}

fn timeline(entries: &[(u64, f64, u64)]) -> Value {
    // (timestamp, cost, tokens) → one entry per UTC date, oldest first.
    let mut days: std::collections::BTreeMap<String, (f64, u64)> = Default::default();
    for (ts, cost, tokens) in entries {
        let d = days.entry(opsdeck::tokens::date_of_day(ts / DAY)).or_default();
        d.0 += cost;
        d.1 += tokens;
    }
    Value::Array(
        days.into_iter().map(|(date, (cost, tokens))| json!({"date": date, "cost": cost, "tokens": tokens})).collect(),
    )
}

#[tokio::test]
async fn agent_costs_per_timeframe() {
    let app = spawn_app().await;
    let ts = seed(&app).await;
    let all = get_ok(&app, "action=agent-costs").await;
    assert_eq!(all["timeframe"], "all");
    assert_eq!(all["recordCount"], 5);
    let alice = &all["agents"]["alice"];
    assert_eq!(alice["stats"], stats(2, 1800, 9.0));
    assert_eq!(alice["models"], json!({"claude-sonnet-4": stats(1, 1500, 4.5), "claude-opus-4-5": stats(1, 300, 4.5)}));
    assert_eq!(alice["sessions"], json!(["alice:s1"]));
    assert_eq!(alice["timeline"], timeline(&[(ts[0], 4.5, 1500), (ts[1], 4.5, 300)]));
    let bob = &all["agents"]["bob"];
    assert_eq!(bob["stats"], stats(2, 25000, 1.0));
    assert_eq!(bob["sessions"], json!(["bob:s2", "bob:s3"]));
    assert_eq!(bob["timeline"], timeline(&[(ts[2], 1.0, 20000), (ts[3], 0.0, 5000)]));
    assert_eq!(all["agents"]["carol"]["timeline"], timeline(&[(ts[4], 1.0, 1000)]));

    for (timeframe, agents, count) in [
        ("hour", vec!["alice"], 1),
        ("day", vec!["alice"], 2),
        ("week", vec!["alice", "bob"], 3),
        ("month", vec!["alice", "bob"], 4),
        ("all", vec!["alice", "bob", "carol"], 5),
    ] {
        let r = get_ok(&app, &format!("action=agent-costs&timeframe={timeframe}")).await;
        let names: Vec<&String> = r["agents"].as_object().unwrap().keys().collect();
        assert_eq!(names, agents, "{timeframe}");
        assert_eq!(r["recordCount"], count, "{timeframe}");
        assert_eq!(r["timeframe"], timeframe);
    }
    let hour = get_ok(&app, "action=agent-costs&timeframe=hour").await;
    assert_eq!(hour["agents"]["alice"]["stats"], stats(1, 1500, 4.5));
    assert_eq!(hour["agents"]["alice"]["timeline"], timeline(&[(ts[0], 4.5, 1500)]));
    let week = get_ok(&app, "action=agent-costs&timeframe=week").await;
    assert_eq!(week["agents"]["bob"]["sessions"], json!(["bob:s2"]));
    assert_eq!(week["agents"]["bob"]["models"], json!({"groq/llama-3.1-8b-instant": stats(1, 20000, 1.0)}));
}

#[tokio::test]
async fn trends_cover_the_last_24_hours_hour_by_hour() {
    let app = spawn_app().await;
    let ts = seed(&app).await;
    let reply = get_ok(&app, "action=trends").await;
    let trends = reply["trends"].as_array().unwrap();
    assert_eq!(trends.len(), 24);
    assert_eq!(reply["timeframe"], "all");
    let now = now_ms();
    let hour = |t: u64| opsdeck::tokens::iso_millis(t - t % HOUR);
    assert_eq!(trends[23]["timestamp"], hour(now));
    assert_eq!(trends[0]["timestamp"], hour(now - 23 * HOUR));
    for t in trends {
        assert!(t["timestamp"].as_str().unwrap().ends_with(":00:00.000Z"), "{t}");
    }
    let at = |t: u64| trends.iter().find(|e| e["timestamp"] == hour(t)).unwrap();
    assert_eq!(*at(ts[0]), json!({"timestamp": hour(ts[0]), "tokens": 1500, "cost": 4.5, "requests": 1}));
    assert_eq!(*at(ts[1]), json!({"timestamp": hour(ts[1]), "tokens": 300, "cost": 4.5, "requests": 1}));
    let requests: u64 = trends.iter().map(|t| t["requests"].as_u64().unwrap()).sum();
    assert_eq!(requests, 2, "older records are outside the 24 hours");
    assert_eq!(get_ok(&app, "action=trends&timeframe=week").await["trends"].as_array().unwrap().len(), 24);
}

#[tokio::test]
async fn csv_export_has_the_header_rows_and_attachment_name() {
    let app = spawn_app().await;
    let ts = seed(&app).await;
    let day = today();
    let reply = app.get("/api/tokens?action=export&format=csv&timeframe=week", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(
        reply.header("content-disposition"),
        Some(format!("attachment; filename=\"token-usage-week-{day}.csv\"").as_str())
    );
    let lines: Vec<&str> = reply.text.lines().collect();
    assert_eq!(
        lines[0],
        "timestamp,agentName,model,sessionId,operation,inputTokens,outputTokens,totalTokens,cost,duration"
    );
    assert_eq!(lines.len(), 4, "{}", reply.text);
    let iso = opsdeck::tokens::iso_millis;
    // Oldest first.
    assert_eq!(
        lines[1],
        format!("{},bob,groq/llama-3.1-8b-instant,bob:s2,chat_completion,10000,10000,20000,1.0000,", iso(ts[2]))
    );
    assert_eq!(lines[2], format!("{},alice,claude-opus-4-5,alice:s1,embedding,200,100,300,4.5000,", iso(ts[1])));
    assert_eq!(
        lines[3],
        format!("{},alice,claude-sonnet-4,alice:s1,chat_completion,1000,500,1500,4.5000,1234.5", iso(ts[0]))
    );
    assert!(lines[1].starts_with(&format!("{}T", opsdeck::tokens::date_of_day(ts[2] / DAY))));

    let all = app.get("/api/tokens?action=export&format=csv", &Auth::ApiKey).await;
    assert_eq!(all.text.lines().count(), 6);
    assert!(all.header("content-disposition").unwrap().contains(&format!("token-usage-all-{day}.csv")));
    assert_eq!(
        all.text.lines().nth(1).unwrap(),
        format!("{},carol,unknown-model,carol:s4,chat_completion,700,300,1000,1.0000,", iso(ts[4]))
    );
    let empty = app.get("/api/tokens?action=export&format=csv&timeframe=hour", &Auth::ApiKey).await;
    assert_eq!(empty.text.lines().count(), 2);
}

#[tokio::test]
async fn csv_export_quotes_and_escapes_fields() {
    let app = spawn_app().await;
    let ts = now_ms() - MINUTE;
    record(
        &app,
        json!({"model": "vendor/model,v2", "sessionId": "dave:\"quoted\"\nnext", "inputTokens": 1000, "outputTokens": 0,
               "operation": "=HYPERLINK(\"x\")", "duration": 12, "timestamp": ts}),
    )
    .await;
    let reply = app.get("/api/tokens?action=export&format=csv", &Auth::ApiKey).await;
    let body = reply.text.strip_prefix(
        "timestamp,agentName,model,sessionId,operation,inputTokens,outputTokens,totalTokens,cost,duration\n",
    );
    assert_eq!(
        body,
        Some(
            format!(
                "{},dave,\"vendor/model,v2\",\"dave:\"\"quoted\"\"\nnext\",\"'=HYPERLINK(\"\"x\"\")\",1000,0,1000,1.0000,12\n",
                opsdeck::tokens::iso_millis(ts)
            )
            .as_str()
        ),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn json_export_has_records_summary_and_stats() {
    let app = spawn_app().await;
    let ts = seed(&app).await;
    let reply = app.get("/api/tokens?action=export&timeframe=month", &Auth::ApiKey).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(
        reply.header("content-disposition"),
        Some(format!("attachment; filename=\"token-usage-month-{}.json\"", today()).as_str())
    );
    let doc = &reply.body;
    assert_eq!(doc["timeframe"], "month");
    let usage = doc["usage"].as_array().unwrap();
    let times: Vec<u64> = usage.iter().map(|r| r["timestamp"].as_u64().unwrap()).collect();
    assert_eq!(times, [ts[3], ts[2], ts[1], ts[0]]);
    assert_eq!(usage[3]["sessionId"], "alice:s1");
    assert_eq!(doc["summary"], stats(4, 26800, 10.0));
    assert_eq!(doc["models"]["ollama/llama3"], stats(1, 5000, 0.0));
    assert_eq!(doc["sessions"]["alice:s1"], stats(2, 1800, 9.0));
    assert_eq!(doc["models"].as_object().unwrap().len(), 4);
    assert!(doc["exportedAt"].as_str().unwrap().ends_with('Z'));

    let json_default = app.get("/api/tokens?action=export&format=json", &Auth::ApiKey).await;
    assert_eq!(json_default.body["usage"].as_array().unwrap().len(), 5);
    let empty = app.get("/api/tokens?action=export&timeframe=hour", &Auth::ApiKey).await;
    assert_eq!(empty.body["usage"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn heartbeat_token_usage_is_recorded_and_costed() {
    let app = spawn_app().await;
    let created = app.post("/api/agents", &Auth::ApiKey, json!({"name": "beater", "role": "qa"})).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let usage = json!({"token_usage": {"model": "claude-sonnet-4", "inputTokens": 10, "outputTokens": 5}});
    let hb = app.post("/api/agents/beater/heartbeat", &Auth::ApiKey, usage).await;
    assert_eq!(hb.status, StatusCode::OK, "{}", hb.text);
    assert_eq!(hb.body, json!({"success": true}));

    let connected = app.post("/api/connect", &Auth::ApiKey, json!({"agent_name": "beater"})).await;
    let connection = connected.body["connection_id"].as_str().unwrap().to_string();
    let usage = json!({"connection_id": connection,
                       "token_usage": {"model": "anthropic/claude-opus-4-5", "inputTokens": 100, "outputTokens": 100}});
    assert_eq!(app.post("/api/agents/beater/heartbeat", &Auth::ApiKey, usage).await.status, StatusCode::OK);

    let list = get_ok(&app, "").await;
    assert_eq!(list["total"], 2);
    let latest = &list["usage"][0];
    assert_eq!(latest["sessionId"], format!("beater:{connection}"));
    assert_eq!(latest["agentName"], "beater");
    assert_eq!(latest["cost"], 3.0); // 200 / 1000 × 15.00
    let first = &list["usage"][1];
    assert_eq!(first["sessionId"], "beater:heartbeat");
    assert_eq!(first["model"], "claude-sonnet-4");
    assert_eq!(first["totalTokens"], 15);
    assert_eq!(first["cost"], 0.045);
    let costs = get_ok(&app, "action=agent-costs&timeframe=hour").await;
    assert_eq!(costs["agents"]["beater"]["stats"], stats(2, 215, 3.045));

    // No agent, no record: the usage is part of the heartbeat's transaction.
    let usage = json!({"token_usage": {"model": "m", "inputTokens": 1, "outputTokens": 1}});
    assert_eq!(app.post("/api/agents/ghost/heartbeat", &Auth::ApiKey, usage).await.status, StatusCode::NOT_FOUND);
    let too_many = json!({"token_usage": {"model": "m", "inputTokens": 1_000_000_000_001u64, "outputTokens": 1}});
    assert_validation(
        &app.post("/api/agents/beater/heartbeat", &Auth::ApiKey, too_many).await,
        "token_usage.inputTokens: must be at most",
    );
    assert_eq!(get_ok(&app, "").await["total"], 2);
}

#[tokio::test]
async fn bad_posts_are_400_naming_the_field() {
    let app = spawn_app().await;
    let base = json!({"model": "m", "sessionId": "a:b", "inputTokens": 1, "outputTokens": 2});
    let with = |key: &str, value: Value| {
        let mut b = base.clone();
        b[key] = value;
        b
    };
    let without = |key: &str| {
        let mut b = base.clone();
        b.as_object_mut().unwrap().remove(key);
        b
    };
    let now = now_ms();
    for (body, detail) in [
        (with("inputTokens", json!(-1)), "inputTokens: must be a non-negative integer"),
        (with("inputTokens", json!(1.5)), "inputTokens: must be a non-negative integer"),
        (with("outputTokens", json!(-3)), "outputTokens: must be a non-negative integer"),
        (with("outputTokens", json!(2.25)), "outputTokens: must be a non-negative integer"),
        (with("inputTokens", json!("10")), "inputTokens:"),
        (with("inputTokens", json!(null)), "inputTokens:"),
        (with("inputTokens", json!(1_000_000_000_001u64)), "inputTokens: must be at most 1000000000000"),
        (without("model"), "model: is required"),
        (without("sessionId"), "sessionId: is required"),
        (without("inputTokens"), "inputTokens: is required"),
        (without("outputTokens"), "outputTokens: is required"),
        (with("model", json!("  ")), "model: must not be empty"),
        (with("model", json!(7)), "model:"),
        (with("sessionId", json!("")), "sessionId: must not be empty"),
        (with("operation", json!(" ")), "operation: must not be empty"),
        (with("duration", json!(-5)), "duration: must be a non-negative number"),
        (with("duration", json!("fast")), "duration:"),
        (with("timestamp", json!(-1)), "timestamp: must be a non-negative integer"),
        (with("timestamp", json!(1.5)), "timestamp: must be a non-negative integer"),
        (with("timestamp", json!(1_700_000_000)), "timestamp: must be a Unix time in milliseconds"),
        (with("timestamp", json!(now + 3_600_000)), "timestamp: must not be more than 5 minutes in the future"),
        (json!([1, 2]), "body: must be a JSON object"),
    ] {
        assert_validation(&app.post("/api/tokens", &Auth::ApiKey, body.clone()).await, detail);
    }
    // Every problem is reported at once.
    let mut body = with("inputTokens", json!(-1));
    body["outputTokens"] = json!(0.5);
    let both = app.post("/api/tokens", &Auth::ApiKey, body).await;
    assert_eq!(
        both.body["details"],
        json!(["inputTokens: must be a non-negative integer", "outputTokens: must be a non-negative integer"])
    );
    let malformed = app.raw(Method::POST, "/api/tokens", &Auth::ApiKey, "{\"model\": ").await;
    assert_eq!(malformed.status, StatusCode::BAD_REQUEST);
    assert_eq!(malformed.error(), "Invalid JSON body");
    assert_eq!(get_ok(&app, "").await["total"], 0, "nothing was recorded");
}

#[tokio::test]
async fn bad_queries_are_400() {
    let app = spawn_app().await;
    for (query, detail) in [
        ("action=nope", "action: must be one of list, stats, agent-costs, export, trends, pricing"),
        ("action=Stats", "action: must be one of"),
        ("timeframe=year", "timeframe: must be one of hour, day, week, month, all"),
        ("action=stats&timeframe=7d", "timeframe: must be one of"),
        ("action=export&format=xml", "format: must be one of json, csv"),
        ("limit=-1", "limit: must be a non-negative integer"),
        ("limit=abc", "limit: must be a non-negative integer"),
        ("offset=-2", "offset: must be a non-negative integer"),
    ] {
        assert_validation(&app.get(&format!("/api/tokens?{query}"), &Auth::ApiKey).await, detail);
    }
    // Empty parameters take their defaults.
    let list = get_ok(&app, "action=&timeframe=").await;
    assert_eq!(list["timeframe"], "all");
    assert!(list["usage"].is_array());
}
