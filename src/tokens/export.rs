//! Export formats of `GET /api/tokens?action=export`: CSV rows and the pieces of the JSON document,
//! written record by record so an export of any size streams in constant memory.

use std::fmt::Write;

use super::{Breakdown, UsageRecord, iso_millis};

pub const CSV_HEADER: &str =
    "timestamp,agentName,model,sessionId,operation,inputTokens,outputTokens,totalTokens,cost,duration\n";

/// `token-usage-<timeframe>-<YYYY-MM-DD>.<csv|json>`.
pub fn filename(timeframe: &str, today: &str, extension: &str) -> String {
    format!("token-usage-{timeframe}-{today}.{extension}")
}

/// One CSV field: quoted (with inner quotes doubled) when it holds a comma, quote or line break. A text
/// that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab or CR first) gets a leading `'`.
pub fn csv_text(out: &mut String, field: &str) {
    let formula = field.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quote = formula || field.contains([',', '"', '\n', '\r']);
    if quote {
        out.push('"');
    }
    if formula {
        out.push('\'');
    }
    for c in field.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    if quote {
        out.push('"');
    }
}

/// A CSV row (with its line break): ISO 8601 timestamp, cost with 4 decimals, empty duration when absent.
pub fn csv_row(out: &mut String, r: &UsageRecord) {
    out.push_str(&iso_millis(r.timestamp));
    for text in [&r.agent_name, &r.model, &r.session_id, &r.operation] {
        out.push(',');
        csv_text(out, text);
    }
    let _ = write!(out, ",{},{},{},{:.4},", r.input_tokens, r.output_tokens, r.total_tokens, r.cost);
    if let Some(d) = r.duration {
        let _ = write!(out, "{d}");
    }
    out.push('\n');
}

/// The JSON export up to the opening of its `usage` array; records follow, then [`JSON_END`].
pub fn json_start(timeframe: &str, exported_at: &str, b: &Breakdown) -> Result<String, serde_json::Error> {
    let head = serde_json::json!({
        "timeframe": timeframe,
        "exportedAt": exported_at,
        "summary": b.summary.stats(),
        "models": b.model_stats(),
        "sessions": b.session_stats(),
    });
    let mut text = serde_json::to_string(&head)?;
    text.pop(); // the closing brace: `usage` comes last
    text.push_str(",\"usage\":[");
    Ok(text)
}

pub const JSON_END: &str = "]}";

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> UsageRecord {
        UsageRecord {
            id: "1-1".into(),
            model: "claude-sonnet-4".into(),
            session_id: "alice:chat".into(),
            agent_name: "alice".into(),
            timestamp: 1_763_700_000_123,
            input_tokens: 10,
            output_tokens: 5,
            total_tokens: 15,
            cost: 0.045,
            operation: "chat_completion".into(),
            duration: None,
        }
    }

    #[test]
    fn csv_rows_quote_escape_and_format() {
        let mut out = String::new();
        csv_row(&mut out, &record());
        assert_eq!(out, "2025-11-21T04:40:00.123Z,alice,claude-sonnet-4,alice:chat,chat_completion,10,5,15,0.0450,\n");

        let mut r = record();
        r.session_id = "bob,\"x\"\nline".into();
        r.model = "=cmd()".into();
        r.operation = "-op".into();
        r.duration = Some(1250.5);
        let mut out = String::new();
        csv_row(&mut out, &r);
        assert_eq!(
            out,
            "2025-11-21T04:40:00.123Z,alice,\"'=cmd()\",\"bob,\"\"x\"\"\nline\",\"'-op\",10,5,15,0.0450,1250.5\n"
        );
    }

    #[test]
    fn json_export_is_one_document() {
        let mut text = json_start("day", "2025-11-21T04:40:00.000Z", &Breakdown::default()).unwrap();
        text.push_str(&serde_json::to_string(&record()).unwrap());
        text.push_str(JSON_END);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["timeframe"], "day");
        assert_eq!(v["usage"][0]["sessionId"], "alice:chat");
        assert_eq!(v["summary"]["requestCount"], 0);
        assert!(v["models"].is_object() && v["sessions"].is_object());
    }
}
