//! Parsers for the four log line formats found in the gateway's log directory. Every function takes any
//! text and answers `None` for lines it does not recognise; none of them can panic.
//!
//! 1. JSON lines: `{"timestamp": 1763683200000, "level": "info", "message": "…", "source"?, "session"?, "data"?}`
//!    (also `time`/`ts`/`@timestamp`, `msg`, `lvl`/`severity`, pino's numeric levels).
//! 2. Pipe-delimited: `timestamp|LEVEL|message`.
//! 3. Date-time text with a bracketed level: `2025-11-21 00:20:00 [INFO] message` (ISO 8601, a space
//!    instead of the `T`, `,` or `.` before milliseconds, an optional offset, or the time in brackets too).
//! 4. Gateway journal lines: `2025-11-21T00:10:01+00:00 host agw[1201]: message` (journalctl short-iso) or
//!    `Nov 21 00:10:01 host agw[1201]: message` (syslog); the level comes from the message's first word.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde_json::{Map, Value};

/// Source given to journal lines.
pub const JOURNAL_SOURCE: &str = "gateway/journal";
/// Longest message kept from a file line (characters); longer ones are cut and marked with `…`.
pub const MAX_MESSAGE_CHARS: usize = 8192;

/// What one line says.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedLine {
    /// Milliseconds; `None` when the line carries no time (a JSON line without one).
    pub timestamp: Option<i64>,
    /// `info`, `warn`, `error` or `debug`.
    pub level: &'static str,
    pub message: String,
    pub session: Option<String>,
    pub data: Option<Value>,
    /// A source named by the line itself (JSON `source`, journal lines), overriding the file's.
    pub source: Option<String>,
}

/// Parses one line in whichever format it is in.
pub fn parse_line(line: &str) -> Option<ParsedLine> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    parse_json(line).or_else(|| parse_pipe(line)).or_else(|| parse_bracketed(line)).or_else(|| parse_journal(line))
}

/// Maps level names to the four levels; `None` for words that are not a level.
pub fn normalize_level(word: &str) -> Option<&'static str> {
    match word.trim().to_ascii_lowercase().as_str() {
        "info" | "information" | "informational" | "notice" | "log" => Some("info"),
        "warn" | "warning" => Some("warn"),
        "error" | "err" | "fatal" | "critical" | "crit" | "panic" | "alert" | "emerg" | "emergency" => Some("error"),
        "debug" | "trace" | "verbose" => Some("debug"),
        _ => None,
    }
}

/// Pino/bunyan numeric levels.
fn numeric_level(n: i64) -> &'static str {
    match n {
        i64::MIN..=29 => "debug",
        30..=39 => "info",
        40..=49 => "warn",
        _ => "error",
    }
}

/// Latest accepted time: the year 9999.
const MAX_MS: i64 = 253_402_300_799_999;

/// Epoch seconds or milliseconds (values of 10^11 and above are milliseconds) → milliseconds.
fn epoch_to_ms(n: i64) -> Option<i64> {
    let ms = if n >= 100_000_000_000 { n } else { n.checked_mul(1000)? };
    (0..=MAX_MS).contains(&ms).then_some(ms)
}

/// A timestamp in any of the accepted forms → milliseconds since the epoch (UTC when no offset is given).
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.is_empty() || s.len() > 40 {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return epoch_to_ms(s.parse().ok()?);
    }
    // `2025-11-21 00:20:02,500` (Python logging) → `.500`; a space instead of the `T`.
    let normalized: String = s.replacen(',', ".", 1).replacen(' ', "T", 1);
    let ms = if let Ok(dt) = DateTime::parse_from_rfc3339(&normalized) {
        dt.timestamp_millis()
    } else if let Ok(dt) = DateTime::parse_from_str(&normalized, "%Y-%m-%dT%H:%M:%S%.f%z") {
        dt.timestamp_millis()
    } else {
        let naive = normalized.strip_suffix('Z').unwrap_or(&normalized);
        let dt = NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
        dt.and_utc().timestamp_millis()
    };
    (0..=MAX_MS).contains(&ms).then_some(ms)
}

/// Cuts overly long messages at a character boundary.
fn clip(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &message[..at]),
        None => message.to_string(),
    }
}

fn text_field<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| obj.get(*n).and_then(Value::as_str)).map(str::trim).filter(|s| !s.is_empty())
}

/// `{"timestamp": …, "level": …, "message": …}`; a message is required.
pub fn parse_json(line: &str) -> Option<ParsedLine> {
    if !line.starts_with('{') {
        return None;
    }
    let obj: Map<String, Value> = serde_json::from_str(line).ok()?;
    let message = text_field(&obj, &["message", "msg"])?;
    let timestamp = ["timestamp", "time", "ts", "@timestamp"].iter().find_map(|n| match obj.get(*n)? {
        Value::Number(n) => epoch_to_ms(n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))?),
        Value::String(s) => parse_timestamp(s),
        _ => None,
    });
    let level = match ["level", "lvl", "severity"].iter().find_map(|n| obj.get(*n)) {
        Some(Value::String(s)) => normalize_level(s).unwrap_or("info"),
        Some(Value::Number(n)) => n.as_i64().map(numeric_level).unwrap_or("info"),
        _ => "info",
    };
    let short = |s: &str| (s.chars().count() <= 200).then(|| s.to_string());
    Some(ParsedLine {
        timestamp,
        level,
        message: clip(message),
        session: text_field(&obj, &["session", "sessionId", "session_id"]).and_then(short),
        data: obj.get("data").filter(|d| d.is_object()).cloned(),
        source: text_field(&obj, &["source"]).and_then(short),
    })
}

/// `timestamp|LEVEL|message`. Any word is accepted as the level (unknown words count as info).
pub fn parse_pipe(line: &str) -> Option<ParsedLine> {
    let mut parts = line.splitn(3, '|');
    let timestamp = parse_timestamp(parts.next()?)?;
    let word = parts.next()?.trim();
    let message = parts.next()?.trim();
    if word.is_empty() || word.len() > 20 || !word.chars().all(|c| c.is_ascii_alphabetic()) || message.is_empty() {
        return None;
    }
    Some(ParsedLine {
        timestamp: Some(timestamp),
        level: normalize_level(word).unwrap_or("info"),
        message: clip(message),
        session: None,
        data: None,
        source: None,
    })
}

/// `<date-time> [LEVEL] message` or `[<date-time>] [LEVEL] message`; the bracket must hold a level.
pub fn parse_bracketed(line: &str) -> Option<ParsedLine> {
    let (timestamp, rest) = if let Some(inner) = line.strip_prefix('[') {
        let (ts, rest) = inner.split_once(']')?;
        (parse_timestamp(ts)?, rest.trim_start())
    } else {
        let at = line.find('[')?;
        (parse_timestamp(&line[..at])?, &line[at..])
    };
    let (word, message) = rest.strip_prefix('[')?.split_once(']')?;
    let level = normalize_level(word)?;
    let message = message.trim_start().trim_start_matches([':', '-']).trim();
    if message.is_empty() {
        return None;
    }
    Some(ParsedLine {
        timestamp: Some(timestamp),
        level,
        message: clip(message),
        session: None,
        data: None,
        source: None,
    })
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// The first space-separated word of `s` and what follows it.
fn take_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    match s.find(' ') {
        _ if s.is_empty() => None,
        Some(i) => Some((&s[..i], &s[i..])),
        None => Some((s, "")),
    }
}

/// `Nov 21 00:10:01` (no year: the latest such time not more than a day ahead of now) → ms and the rest.
fn syslog_timestamp(line: &str) -> Option<(i64, &str)> {
    let (month, rest) = take_word(line)?;
    let (day, rest) = take_word(rest)?;
    let (time, rest) = take_word(rest)?;
    let month = MONTHS.iter().position(|m| month.eq_ignore_ascii_case(m))? as u32 + 1;
    let day: u32 = day.parse().ok()?;
    let clock = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S").ok()?;
    let now = Utc::now();
    let at = |year: i32| NaiveDate::from_ymd_opt(year, month, day).map(|d| Utc.from_utc_datetime(&d.and_time(clock)));
    let dt = match at(now.year()) {
        Some(dt) if dt <= now + chrono::Duration::days(1) => dt,
        // In the future (or Feb 29 of a common year): the line is from last year.
        _ => at(now.year() - 1)?,
    };
    Some((dt.timestamp_millis(), rest))
}

/// Is `ident` a process tag such as `agw`, `agw[1201]` or `node/agw`?
fn process_tag(ident: &str) -> Option<(&str, Option<u64>)> {
    let (name, pid) = match ident.strip_suffix(']') {
        Some(head) => {
            let (name, pid) = head.split_once('[')?;
            (name, Some(pid.parse::<u64>().ok()?))
        }
        None => (ident, None),
    };
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '@'));
    ok.then_some((name, pid))
}

/// `<time> <host> <process>[<pid>]: message`; the level is the message's first word when it names one.
pub fn parse_journal(line: &str) -> Option<ParsedLine> {
    let (timestamp, rest) = match line.split_once(' ') {
        Some((first, rest)) if first.contains('-') => (parse_timestamp(first)?, rest),
        _ => syslog_timestamp(line)?,
    };
    let (host, rest) = rest.trim_start().split_once(' ')?;
    if host.is_empty() || host.len() > 253 || host.contains([':', '[', '|']) {
        return None;
    }
    let (ident, message) = rest.trim_start().split_once(':')?;
    let (process, pid) = process_tag(ident)?;
    let message = message.trim();
    if message.is_empty() {
        return None;
    }
    let first = message.split_whitespace().next().unwrap_or("");
    let level = normalize_level(first.trim_end_matches(':').trim_matches(['[', ']'])).unwrap_or("info");
    let mut data = Map::new();
    data.insert("host".into(), Value::String(host.to_string()));
    data.insert("process".into(), Value::String(process.to_string()));
    if let Some(pid) = pid {
        data.insert("pid".into(), Value::from(pid));
    }
    Some(ParsedLine {
        timestamp: Some(timestamp),
        level,
        message: clip(message),
        session: None,
        data: Some(Value::Object(data)),
        source: Some(JOURNAL_SOURCE.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T0: i64 = 1_763_683_200_000; // 2025-11-21T00:00:00Z

    #[test]
    fn timestamps_in_every_accepted_form() {
        assert_eq!(parse_timestamp("2025-11-21T00:00:00Z"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21T00:00:00+00:00"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21T01:00:00+01:00"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21 00:00:00"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21T00:00:00"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21 00:00:00Z"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21 00:00:00.250"), Some(T0 + 250));
        assert_eq!(parse_timestamp("2025-11-21 00:00:00,500"), Some(T0 + 500));
        assert_eq!(parse_timestamp("2025-11-21T00:00:01.250Z"), Some(T0 + 1250));
        assert_eq!(parse_timestamp("2025-11-21 00:00:00 +0000"), Some(T0));
        assert_eq!(parse_timestamp("2025-11-21 02:00:00+0200"), Some(T0));
        assert_eq!(parse_timestamp("1763683200"), Some(T0));
        assert_eq!(parse_timestamp("1763683200000"), Some(T0));
        for bad in ["", "yesterday", "2025-11-21", "2025-13-01 00:00:00", "99999999999999999999", "-5", "12:00:00"] {
            assert_eq!(parse_timestamp(bad), None, "{bad}");
        }
    }

    #[test]
    fn levels() {
        assert_eq!(normalize_level("WARNING"), Some("warn"));
        assert_eq!(normalize_level("Err"), Some("error"));
        assert_eq!(normalize_level("fatal"), Some("error"));
        assert_eq!(normalize_level("TRACE"), Some("debug"));
        assert_eq!(normalize_level("MONITOR"), None);
    }

    #[test]
    fn json_lines() {
        let p = parse_line(
            r#"{"timestamp":1763683200000,"level":"info","source":"gateway","message":"gateway started","data":{"port":18789}}"#,
        )
        .unwrap();
        assert_eq!(p.timestamp, Some(T0));
        assert_eq!((p.level, p.message.as_str(), p.source.as_deref()), ("info", "gateway started", Some("gateway")));
        assert_eq!(p.data, Some(serde_json::json!({"port": 18789})));
        let p = parse_line(r#"{"timestamp":1763683260000,"level":"warn","session":"builder:main","message":"full"}"#)
            .unwrap();
        assert_eq!((p.level, p.session.as_deref(), p.source), ("warn", Some("builder:main"), None));
        let p = parse_line(r#"{"time":"2025-11-21T00:00:00Z","lvl":"ERROR","msg":"boom","data":[1]}"#).unwrap();
        assert_eq!((p.timestamp, p.level, p.message.as_str(), p.data), (Some(T0), "error", "boom", None));
        let p = parse_line(r#"{"level":40,"msg":"pino warn","time":1763683200}"#).unwrap();
        assert_eq!((p.timestamp, p.level), (Some(T0), "warn"));
        let p = parse_line(r#"{"message":"no time","level":"chatty"}"#).unwrap();
        assert_eq!((p.timestamp, p.level), (None, "info"));
        assert_eq!(parse_json(r#"{"level":"info"}"#), None, "a message is required");
        assert_eq!(parse_json(r#"{"message":""}"#), None);
        assert_eq!(parse_json("not json at all {"), None);
        assert_eq!(parse_json("{broken"), None);
        assert_eq!(parse_json(r#"{"message": 5}"#), None);
    }

    #[test]
    fn pipe_lines() {
        let p = parse_line("2025-11-21T00:06:00+00:00|ERROR|Disk usage above 90%").unwrap();
        assert_eq!((p.timestamp, p.level, p.message.as_str()), (Some(T0 + 360_000), "error", "Disk usage above 90%"));
        assert_eq!(parse_line("2025-11-21T00:07:00+00:00|warning|Queue depth 120").unwrap().level, "warn");
        assert_eq!(parse_line("2025-11-21T00:05:00+00:00|MONITOR|Consistency check").unwrap().level, "info");
        assert_eq!(parse_line("2025-11-21T00:08:00Z|DEBUG|tick").unwrap().level, "debug");
        let p = parse_line("1763683200000|INFO|a|b|c").unwrap();
        assert_eq!(p.message, "a|b|c", "pipes inside the message stay");
        assert_eq!(parse_pipe("not a time|INFO|x"), None);
        assert_eq!(parse_pipe("2025-11-21T00:00:00Z|IN FO|x"), None);
        assert_eq!(parse_pipe("2025-11-21T00:00:00Z|INFO|"), None);
        assert_eq!(parse_pipe("2025-11-21T00:00:00Z|INFO"), None);
    }

    #[test]
    fn bracketed_lines() {
        let p = parse_line("2025-11-21 00:20:00 [INFO] worker pool ready").unwrap();
        assert_eq!((p.timestamp, p.level, p.message.as_str()), (Some(T0 + 1_200_000), "info", "worker pool ready"));
        let p = parse_line("2025-11-21T00:20:01.250Z [ERROR] failed to reach webhook endpoint").unwrap();
        assert_eq!((p.timestamp, p.level), (Some(T0 + 1_201_250), "error"));
        let p = parse_line("2025-11-21 00:20:02,500 [WARN] retrying").unwrap();
        assert_eq!((p.timestamp, p.level, p.message.as_str()), (Some(T0 + 1_202_500), "warn", "retrying"));
        let p = parse_line("[2025-11-21T00:00:00Z] [debug]: details here").unwrap();
        assert_eq!((p.timestamp, p.level, p.message.as_str()), (Some(T0), "debug", "details here"));
        assert_eq!(parse_bracketed("2025-11-21 00:20:00 [main] started"), None, "the bracket must hold a level");
        assert_eq!(parse_bracketed("plain line without a timestamp"), None);
        assert_eq!(parse_bracketed("2025-11-21 00:20:00 [INFO]"), None);
        assert_eq!(parse_line("plain line without a timestamp"), None);
    }

    #[test]
    fn journal_lines() {
        let p = parse_line("2025-11-21T00:10:01+00:00 opsbox agw[1201]: listening on 127.0.0.1:18789").unwrap();
        assert_eq!(p.timestamp, Some(T0 + 601_000));
        assert_eq!((p.level, p.message.as_str()), ("info", "listening on 127.0.0.1:18789"));
        assert_eq!(p.source.as_deref(), Some(JOURNAL_SOURCE));
        assert_eq!(p.data, Some(serde_json::json!({"host": "opsbox", "process": "agw", "pid": 1201})));
        let p = parse_line("2025-11-21T00:10:05+00:00 opsbox agw[1201]: WARN slow response from provider").unwrap();
        assert_eq!(p.level, "warn");
        let p = parse_line("2025-11-21T00:10:09+00:00 opsbox agw[1201]: Error: session builder:main crashed").unwrap();
        assert_eq!((p.level, p.message.as_str()), ("error", "Error: session builder:main crashed"));
        let p = parse_line("Nov 21 00:10:01 opsbox agw: started").unwrap();
        assert_eq!(parse_line("Nov  1 00:10:01 opsbox agw: padded day").unwrap().message, "padded day");
        assert_eq!(p.data, Some(serde_json::json!({"host": "opsbox", "process": "agw"})));
        let dt = DateTime::from_timestamp_millis(p.timestamp.unwrap()).unwrap();
        assert_eq!((dt.month(), dt.day()), (11, 21));
        assert!(p.timestamp.unwrap() <= Utc::now().timestamp_millis() + 86_400_000);
        assert_eq!(parse_journal("2025-11-21T00:10:01+00:00 opsbox agw[12x]: bad pid"), None);
        assert_eq!(parse_journal("2025-11-21T00:10:01+00:00 opsbox agw[1201]:"), None);
        assert_eq!(parse_journal("2025-11-21T00:10:01+00:00 just words here"), None);
        assert_eq!(parse_journal("Foo 21 00:10:01 host p: x"), None);
        assert_eq!(parse_journal("Feb 30 00:10:01 host p: x"), None);
    }

    #[test]
    fn long_messages_are_clipped_on_a_char_boundary() {
        let line = format!("2025-11-21 00:00:00 [INFO] {}", "é".repeat(MAX_MESSAGE_CHARS + 10));
        let p = parse_line(&line).unwrap();
        assert_eq!(p.message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(p.message.ends_with('…'));
    }

    #[test]
    fn garbage_is_skipped() {
        for line in ["", "   ", "{", "}", "|", "||", "[", "]", "[]", "[INFO]", "2025", ":", "a b c: d", "\u{0}\u{1}"] {
            assert_eq!(parse_line(line), None, "{line:?}");
        }
    }

    proptest! {
        #[test]
        fn any_text_never_panics(s in "\\PC*") {
            let _ = parse_line(&s);
        }

        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_line(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn structured_looking_noise_never_panics(
            ts in "[0-9T:. ,Z+-]{0,30}",
            word in "[\\[\\]A-Za-z|: ]{0,12}",
            rest in ".{0,40}",
        ) {
            let _ = parse_line(&format!("{ts}|{word}|{rest}"));
            let _ = parse_line(&format!("{ts} [{word}] {rest}"));
            let _ = parse_line(&format!("{ts} host {word}: {rest}"));
            let _ = parse_line(&format!("[{ts}] {word} {rest}"));
        }
    }
}
