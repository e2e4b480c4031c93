//! Logs: entries added through the API (stored) merged with the gateway's log files (`AGW_LOG_DIR`).
//!
//! Files are read from the end (at most [`TAIL_BYTES`] each), parsed line by line (see `parse.rs`);
//! lines in no known format are skipped. A file's source is its path relative to the log directory
//! without the extension (`gateway/journal.log` → `gateway/journal`), unless a line names its own.

pub mod api;
pub mod parse;
pub mod store;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use salvo_oapi::ToSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub const LEVELS: [&str; 4] = ["info", "warn", "error", "debug"];
/// The service's own source name; `mission-control` (the original service's name) is replaced by it.
pub const OWN_SOURCE: &str = "opsdeck";
/// How much of the end of each log file is read.
pub const TAIL_BYTES: u64 = 1024 * 1024;
/// How much is read from all log files together per request.
pub const TOTAL_BYTES: u64 = 16 * 1024 * 1024;
/// Log files considered per request, and how deep the log directory is walked.
const MAX_FILES: usize = 256;
const MAX_DEPTH: usize = 4;
/// File extensions read as logs.
const EXTENSIONS: [&str; 3] = ["log", "jsonl", "txt"];

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[salvo(schema(name = "LogEntry"))]
pub struct LogEntry {
    /// `db-<n>` for entries added through the API, `file-<hash>` for file lines (stable per line).
    pub id: String,
    /// Milliseconds.
    pub timestamp: i64,
    /// `info`, `warn`, `error` or `debug`.
    pub level: String,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// Filters of `action=recent` (and `source` of `tail`). `search` is matched case-insensitively
/// against the message.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub level: Option<String>,
    pub source: Option<String>,
    pub session: Option<String>,
    /// Lower-cased.
    pub search: Option<String>,
    /// Only entries newer than this (ms).
    pub since: Option<i64>,
}

impl Filter {
    pub fn matches(&self, e: &LogEntry) -> bool {
        self.level.as_ref().is_none_or(|l| *l == e.level)
            && self.source.as_ref().is_none_or(|s| *s == e.source)
            && self.session.as_ref().is_none_or(|s| e.session.as_ref() == Some(s))
            && self.search.as_ref().is_none_or(|q| e.message.to_lowercase().contains(q.as_str()))
            && self.since.is_none_or(|since| e.timestamp > since)
    }
}

/// The source name given to an entry: empty → our own; `mission-control` → our own.
pub fn effective_source(given: Option<&str>) -> String {
    match given.map(str::trim).filter(|s| !s.is_empty()) {
        None | Some("mission-control") => OWN_SOURCE.into(),
        Some(s) => s.to_string(),
    }
}

/// Newest first (ties by id, so the order is stable), at most `limit`.
pub fn merge(mut entries: Vec<LogEntry>, filter: &Filter, limit: usize) -> Vec<LogEntry> {
    entries.retain(|e| filter.matches(e));
    entries.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| b.id.cmp(&a.id)));
    entries.truncate(limit);
    entries
}

/// Log files under `dir` (not following symlinked directories) with their source names, sorted.
pub fn log_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    while let Some((current, depth)) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&current) else { continue };
        for entry in read.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if depth + 1 < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            let is_log = path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e));
            // Regular files, or symlinks to them.
            if !is_log || !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            let Ok(relative) = path.strip_prefix(dir) else { continue };
            let source = relative.with_extension("").to_string_lossy().replace('\\', "/");
            found.push((path, source));
        }
    }
    found.sort();
    found.truncate(MAX_FILES);
    found
}

/// The last `max` bytes of a file, starting at a line boundary, and the file offset they start at.
pub fn read_tail(path: &Path, max: u64) -> std::io::Result<(u64, Vec<u8>)> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let start = len.saturating_sub(max);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.take(max).read_to_end(&mut bytes)?;
    if start == 0 {
        return Ok((0, bytes));
    }
    // Drop the partial first line (unless the cut fell exactly after a newline).
    let mut preceded_by_newline = [0u8; 1];
    let mut probe = File::open(path)?;
    probe.seek(SeekFrom::Start(start - 1))?;
    let skip = if probe.read(&mut preceded_by_newline)? == 1 && preceded_by_newline[0] == b'\n' {
        0
    } else {
        bytes.iter().position(|b| *b == b'\n').map_or(bytes.len(), |i| i + 1)
    };
    Ok((start + skip as u64, bytes.split_off(skip)))
}

fn line_id(source: &str, offset: u64, line: &str) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update([0]);
    h.update(offset.to_be_bytes());
    h.update(line.as_bytes());
    format!("file-{}", hex::encode(&h.finalize()[..8]))
}

/// Parses the text of one file. `fallback_ms` is the time of lines that carry none (the file's mtime).
pub fn parse_file_text(source: &str, start_offset: u64, bytes: &[u8], fallback_ms: i64) -> Vec<LogEntry> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let mut offset = start_offset;
    for raw in text.split_inclusive('\n') {
        let here = offset;
        offset += raw.len() as u64;
        let line = raw.trim_end_matches(['\n', '\r']);
        let Some(p) = parse::parse_line(line) else { continue };
        out.push(LogEntry {
            id: line_id(source, here, line),
            timestamp: p.timestamp.unwrap_or(fallback_ms),
            level: p.level.to_string(),
            source: p.source.unwrap_or_else(|| source.to_string()),
            session: p.session,
            message: p.message,
            data: p.data,
        });
    }
    out
}

/// Every parsed entry of the log files under `dir` (a missing directory has none). The most recently
/// modified files are read first; each gives at most [`TAIL_BYTES`] from its end and all together at
/// most [`TOTAL_BYTES`].
pub fn file_entries(dir: &Path) -> Vec<LogEntry> {
    let modified_ms = |path: &Path| {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    };
    let mut files: Vec<(i64, PathBuf, String)> =
        log_files(dir).into_iter().map(|(path, source)| (modified_ms(&path), path, source)).collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut budget = TOTAL_BYTES;
    let mut out = Vec::new();
    for (mtime, path, source) in files {
        if budget == 0 {
            break;
        }
        let Ok((start, bytes)) = read_tail(&path, TAIL_BYTES.min(budget)) else { continue };
        budget = budget.saturating_sub(bytes.len() as u64);
        out.extend(parse_file_text(&source, start, &bytes, mtime));
    }
    out
}

/// The distinct sources of `entries` plus `more`, sorted.
pub fn sources(entries: &[LogEntry], more: Vec<String>) -> Vec<String> {
    let set: BTreeSet<String> = entries.iter().map(|e| e.source.clone()).chain(more).collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn entry(id: &str, ts: i64, level: &str, source: &str, message: &str) -> LogEntry {
        LogEntry {
            id: id.into(),
            timestamp: ts,
            level: level.into(),
            source: source.into(),
            session: None,
            message: message.into(),
            data: None,
        }
    }

    #[test]
    fn sources_default_to_our_own() {
        assert_eq!(effective_source(None), "opsdeck");
        assert_eq!(effective_source(Some("  ")), "opsdeck");
        assert_eq!(effective_source(Some("mission-control")), "opsdeck");
        assert_eq!(effective_source(Some(" builder ")), "builder");
    }

    #[test]
    fn merge_filters_sorts_newest_first_and_limits() {
        let all = vec![
            entry("a", 1, "info", "x", "Hello"),
            entry("b", 3, "error", "y", "Boom"),
            entry("c", 2, "info", "y", "hello again"),
            entry("d", 3, "info", "x", "tie"),
        ];
        let ids = |v: Vec<LogEntry>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(merge(all.clone(), &Filter::default(), 10)), ["d", "b", "c", "a"]);
        assert_eq!(ids(merge(all.clone(), &Filter::default(), 2)), ["d", "b"]);
        let f = Filter { search: Some("hello".into()), ..Filter::default() };
        assert_eq!(ids(merge(all.clone(), &f, 10)), ["c", "a"]);
        let f = Filter { level: Some("info".into()), source: Some("y".into()), ..Filter::default() };
        assert_eq!(ids(merge(all.clone(), &f, 10)), ["c"]);
        let f = Filter { since: Some(2), ..Filter::default() };
        assert_eq!(ids(merge(all, &f, 10)), ["d", "b"]);
    }

    #[test]
    fn files_are_found_recursively_with_relative_sources() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("gateway")).unwrap();
        std::fs::write(dir.path().join("app.log"), "2025-11-21 00:00:00 [INFO] a\n").unwrap();
        std::fs::write(dir.path().join("gateway/journal.log"), "").unwrap();
        std::fs::write(dir.path().join("notes.md"), "ignored").unwrap();
        std::fs::write(dir.path().join("old.log.gz"), "ignored").unwrap();
        let sources: Vec<String> = log_files(dir.path()).into_iter().map(|(_, s)| s).collect();
        assert_eq!(sources, ["app", "gateway/journal"]);
        assert!(log_files(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn tail_reads_only_the_end_from_a_line_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.log");
        let mut f = File::create(&path).unwrap();
        for i in 0..1000 {
            writeln!(f, "2025-11-21 00:00:00 [INFO] line {i:04}").unwrap();
        }
        drop(f);
        let line_len = "2025-11-21 00:00:00 [INFO] line 0000\n".len() as u64;
        let (start, bytes) = read_tail(&path, 10 * line_len + 5).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text.lines().count(), 10, "the partial line is dropped");
        assert!(text.starts_with("2025-11-21 00:00:00 [INFO] line 0990"));
        assert_eq!(start, 990 * line_len);
        let (start, bytes) = read_tail(&path, 10 * line_len).unwrap();
        assert_eq!((start, String::from_utf8(bytes).unwrap().lines().count()), (990 * line_len, 10));
        let entries = parse_file_text("big", start, &read_tail(&path, 10 * line_len).unwrap().1, 0);
        assert_eq!(entries.len(), 10);
        let (wide_start, wide) = read_tail(&path, 20 * line_len).unwrap();
        let wider = parse_file_text("big", wide_start, &wide, 0);
        assert_eq!(entries, wider[10..], "ids are stable whatever the window");
        assert_ne!(wider[0].id, wider[10].id);
        let (start, bytes) = read_tail(&path, u64::MAX).unwrap();
        assert_eq!((start, bytes.len() as u64), (0, 1000 * line_len));
    }

    #[test]
    fn file_lines_keep_the_file_source_unless_they_name_one() {
        let text = concat!(
            "{\"timestamp\":1763683200000,\"source\":\"gateway\",\"message\":\"own source\"}\n",
            "{\"timestamp\":1763683200000,\"message\":\"file source\"}\n",
            "garbage\n",
            "{\"message\":\"no time\"}\r\n",
        );
        let e = parse_file_text("logs/app", 0, text.as_bytes(), 42);
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].source.as_str(), e[1].source.as_str()), ("gateway", "logs/app"));
        assert_eq!(e[2].timestamp, 42);
        assert_ne!(e[0].id, e[1].id);
        assert!(e.iter().all(|x| x.id.starts_with("file-") && x.id.len() == 21));
    }

    proptest! {
        #[test]
        fn any_file_content_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse_file_text("x", 0, &bytes, 0);
        }
    }
}
