//! The local session scan: Claude-Code-style JSONL transcripts under `SVC_LOCAL_SESSIONS_DIR`, one
//! file per session inside one folder per project. Lines that are not JSON are skipped and counted.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

/// What one transcript says about its session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalSession {
    pub id: String,
    /// The project: the last component of the working directory (or of the folder name).
    pub project: String,
    pub model: String,
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_uses: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Tokens in the context at the last main turn (input + cache reads/creation).
    pub context_used: u64,
    pub last_user_prompt: String,
    /// Seconds.
    pub start_time: i64,
    /// Seconds.
    pub last_activity: i64,
    pub skipped_lines: u64,
}

fn timestamp_secs(line: &Value) -> Option<i64> {
    let ts = line.get("timestamp")?.as_str()?;
    chrono::DateTime::parse_from_rfc3339(ts).ok().map(|t| t.timestamp())
}

/// Reads one transcript. A line that does not parse is skipped and counted; a sidechain turn is not
/// counted; a user line whose content is tool results is not a typed prompt.
pub fn scan_reader(id: &str, folder: &str, reader: impl BufRead) -> LocalSession {
    let mut s = LocalSession { id: id.to_string(), ..Default::default() };
    let mut cwd: Option<String> = None;
    for line in reader.lines() {
        let Ok(line) = line else {
            s.skipped_lines += 1;
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            s.skipped_lines += 1;
            continue;
        };
        if cwd.is_none() {
            cwd = v.get("cwd").and_then(Value::as_str).map(str::to_string);
        }
        if let Some(t) = timestamp_secs(&v) {
            if s.start_time == 0 || t < s.start_time {
                s.start_time = t;
            }
            s.last_activity = s.last_activity.max(t);
        }
        if v.get("isSidechain").and_then(Value::as_bool).unwrap_or(false) {
            continue;
        }
        let message = v.get("message");
        match v.get("type").and_then(Value::as_str) {
            Some("user") => {
                if let Some(text) = message.and_then(|m| m.get("content")).and_then(Value::as_str) {
                    s.user_messages += 1;
                    s.last_user_prompt = text.to_string();
                }
            }
            Some("assistant") => {
                s.assistant_messages += 1;
                let Some(m) = message else { continue };
                if let Some(model) = m.get("model").and_then(Value::as_str) {
                    s.model = model.to_string();
                }
                if let Some(items) = m.get("content").and_then(Value::as_array) {
                    s.tool_uses +=
                        items.iter().filter(|i| i.get("type").and_then(Value::as_str) == Some("tool_use")).count()
                            as u64;
                }
                if let Some(u) = m.get("usage") {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    s.input_tokens += n("input_tokens");
                    s.output_tokens += n("output_tokens");
                    s.context_used =
                        n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens");
                }
            }
            _ => {}
        }
    }
    let from_cwd = cwd.as_deref().and_then(|c| Path::new(c).file_name()).map(|n| n.to_string_lossy().into_owned());
    s.project = from_cwd.unwrap_or_else(|| folder.rsplit('-').find(|p| !p.is_empty()).unwrap_or(folder).to_string());
    s
}

/// Scans every `<root>/<project>/<session>.jsonl`. A missing root is no sessions, not an error.
pub fn scan(root: &Path) -> Vec<LocalSession> {
    let mut out = Vec::new();
    let Ok(projects) = std::fs::read_dir(root) else { return out };
    for project in projects.flatten() {
        let folder = project.file_name().to_string_lossy().into_owned();
        let Ok(files) = std::fs::read_dir(project.path()) else { continue };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let Some(id) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else { continue };
            let Ok(f) = File::open(&path) else { continue };
            let session = scan_reader(&id, &folder, BufReader::new(f));
            if session.skipped_lines > 0 {
                tracing::debug!(file = %path.display(), skipped = session.skipped_lines, "skipped malformed transcript lines");
            }
            out.push(session);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_the_fixture_transcript() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/local-sessions");
        let sessions = scan(&root);
        assert_eq!(sessions.len(), 1);
        let s = &sessions[0];
        assert_eq!(s.id, "5f0c2a9e-1111-4a2b-9c3d-000000000001");
        assert_eq!(s.project, "webshop");
        assert_eq!((s.user_messages, s.assistant_messages, s.tool_uses), (2, 2, 2));
        assert_eq!(s.model, "claude-sonnet-4-5");
        assert_eq!(s.last_user_prompt, "Now write a test for it");
        assert_eq!(s.skipped_lines, 1);
        assert_eq!((s.input_tokens, s.output_tokens), (2100, 550));
        assert_eq!(s.last_activity - s.start_time, 120);
    }

    #[test]
    fn a_missing_root_is_empty() {
        assert!(scan(Path::new("/nonexistent/opsdeck/sessions")).is_empty());
    }

    proptest! {
        #[test]
        fn any_text_never_panics(text in ".{0,400}") {
            let s = scan_reader("x", "-a-b", text.as_bytes());
            prop_assert!(s.user_messages + s.assistant_messages <= text.lines().count() as u64);
        }
    }
}
