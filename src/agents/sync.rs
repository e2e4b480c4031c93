//! Agent sync: the primary gateway's agent configuration (`GET /config`), or the configuration file
//! when the gateway is unreachable, read together with each workspace's `soul.md`, `identity.md` and
//! `TOOLS.md`; missing agents are created and existing ones updated.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

/// What `identity.md` says: the first `#` heading, `theme:` and `emoji:` lines (keys case-insensitive).
#[derive(Debug, Default, PartialEq)]
pub struct Identity {
    pub name: Option<String>,
    pub theme: Option<String>,
    pub emoji: Option<String>,
}

pub fn parse_identity(text: &str) -> Identity {
    let mut id = Identity::default();
    for line in text.lines().map(str::trim) {
        if id.name.is_none()
            && let Some(h) = line.strip_prefix('#')
            && !h.starts_with('#')
        {
            let h = h.trim();
            if !h.is_empty() {
                id.name = Some(h.to_string());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            match key.trim().to_ascii_lowercase().as_str() {
                "theme" if id.theme.is_none() => id.theme = Some(value.to_string()),
                "emoji" if id.emoji.is_none() => id.emoji = Some(value.to_string()),
                _ => {}
            }
        }
    }
    id
}

/// `- x` / `* x` list items of `TOOLS.md`, backticks stripped.
pub fn parse_tools(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")))
        .map(|t| t.trim().trim_matches('`').trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// One agent as the configuration and its workspace describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    pub name: String,
    pub role: String,
    pub soul: Option<String>,
    pub config: Value,
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 1024 * 1024 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// A workspace path from the configuration, resolved against `base`; `None` when it escapes with `..`.
fn workspace_dir(base: &Path, raw: &str) -> Option<PathBuf> {
    let p = Path::new(raw);
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    Some(if p.is_absolute() { p.to_path_buf() } else { base.join(p) })
}

fn model_of(entry: &Value) -> Option<String> {
    match entry.get("model")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => m.get("primary").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Reads `agents.list[]` of a configuration document; `base` resolves relative workspaces.
pub fn describe(doc: &Value, base: &Path) -> Vec<Described> {
    let Some(list) = doc.pointer("/agents/list").and_then(Value::as_array) else { return Vec::new() };
    let mut out: Vec<Described> = Vec::new();
    for entry in list.iter().filter(|e| e.is_object()) {
        let text =
            |v: Option<&Value>| v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        let id_field = text(entry.get("id"));
        let mut identity = Identity {
            name: text(entry.pointer("/identity/name")),
            theme: text(entry.pointer("/identity/theme")),
            emoji: text(entry.pointer("/identity/emoji")),
        };
        let workspace = text(entry.get("workspace")).and_then(|w| workspace_dir(base, &w));
        let mut tools: Vec<String> = entry
            .pointer("/tools/allow")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let mut soul = None;
        if let Some(dir) = &workspace {
            if let Some(md) = read_small(&dir.join("identity.md")) {
                let from_file = parse_identity(&md);
                identity.name = from_file.name.or(identity.name);
                identity.theme = from_file.theme.or(identity.theme);
                identity.emoji = from_file.emoji.or(identity.emoji);
            }
            if let Some(md) = read_small(&dir.join("TOOLS.md")) {
                for t in parse_tools(&md) {
                    if !tools.contains(&t) {
                        tools.push(t);
                    }
                }
            }
            soul = read_small(&dir.join("soul.md")).filter(|s| !s.trim().is_empty());
        }
        let Some(name) = identity.name.clone().or_else(|| text(entry.get("name"))).or(id_field.clone()) else {
            continue;
        };
        if out.iter().any(|d| d.name == name) {
            continue;
        }
        let mut config = Map::new();
        if let Some(m) = model_of(entry) {
            config.insert("model".into(), json!(m));
        }
        config.insert("tools".into(), json!(tools));
        config.insert(
            "identity".into(),
            json!({"name": identity.name, "theme": identity.theme, "emoji": identity.emoji}),
        );
        for key in ["sandbox", "memorySearch"] {
            if let Some(v) = entry.get(key) {
                config.insert(key.into(), v.clone());
            }
        }
        if let Some(dir) = &workspace {
            config.insert("workspace".into(), json!(dir.to_string_lossy()));
        }
        if let Some(id) = id_field {
            config.insert("gateway_agent_id".into(), json!(id));
        }
        out.push(Described {
            name,
            role: identity.theme.clone().unwrap_or_else(|| "agent".into()),
            soul,
            config: Value::Object(config),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn identity_lines() {
        let id = parse_identity("# Builder\ntheme: developer\nEmoji: 🔨\n\nShips small changes.");
        assert_eq!(
            id,
            Identity { name: Some("Builder".into()), theme: Some("developer".into()), emoji: Some("🔨".into()) }
        );
        let no_heading = parse_identity("THEME: analyst\n## not a name");
        assert_eq!((no_heading.name, no_heading.theme.as_deref()), (None, Some("analyst")));
    }

    #[test]
    fn tools_list_items() {
        assert_eq!(
            parse_tools("# Tools\n\n- `shell`\n- git\n* sessions_send\nNot a tool line.\n-nospace"),
            ["shell", "git", "sessions_send"]
        );
    }

    #[test]
    fn describes_the_fixture_home() {
        let home = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agw-home");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(home.join("openclaw.json")).unwrap()).unwrap();
        let agents = describe(&doc, &home);
        let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["Builder", "Scout", "gatekeeper"]);
        assert_eq!(agents[0].role, "developer");
        assert_eq!(agents[0].config["tools"], json!(["shell", "git", "sessions_send"]));
        assert_eq!(agents[0].config["model"], "anthropic/claude-sonnet-4-20250514");
        assert!(agents[0].soul.is_some());
        assert_eq!(
            (agents[1].role.as_str(), agents[1].config["identity"]["name"].as_str()),
            ("analyst", Some("Scout"))
        );
        assert_eq!((agents[2].role.as_str(), agents[2].soul.as_deref()), ("qa", None));
        assert!(agents[2].config.get("workspace").is_none());
    }

    #[test]
    fn escaping_workspaces_are_ignored() {
        let doc = json!({"agents": {"list": [{"id": "x", "workspace": "../../etc"}]}});
        let agents = describe(&doc, Path::new("/tmp"));
        assert!(agents[0].config.get("workspace").is_none());
    }

    proptest! {
        #[test]
        fn parsers_never_panic(text in ".{0,300}") {
            let _ = parse_identity(&text);
            let _ = parse_tools(&text);
        }
    }
}
