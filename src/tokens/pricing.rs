//! Model pricing: USD per 1,000 tokens, `cost = (input + output) / 1000 × rate`.
//!
//! Lookup order for a model name (compared case-insensitively):
//! 1. an exact entry;
//! 2. a provider wildcard `provider/*` (longest prefix wins) — `ollama/*` is 0.00 by default, so a locally
//!    hosted model is free even when its name resembles a hosted one (the interface: "the 0.00 rate applies
//!    to locally hosted models");
//! 3. a partial match: the name contains an entry's short name (the part after its last `/`), so
//!    `anthropic/claude-sonnet-4` and `claude-sonnet-4-20250514` match `claude-sonnet-4`, and
//!    `llama-3.1-8b-instant` matches `groq/llama-3.1-8b-instant`; the longest short name wins (then the
//!    alphabetically first entry), so `gpt-4o-mini` beats `gpt-4o`;
//! 4. the default rate (1.00 unless the table sets `*`).
//!
//! Operators override or extend the defaults with a JSON file (`SVC_PRICING_PATH`): an object of model
//! name → rate; `provider/*` keys are wildcards and `*` sets the default rate.

use std::collections::BTreeMap;
use std::path::Path;

/// The built-in table (DECISIONS "Tokens").
const DEFAULTS: &[(&str, f64)] = &[
    ("claude-opus-4-5", 15.00),
    ("anthropic/claude-opus-4-5", 15.00),
    ("claude-sonnet-4", 3.00),
    ("anthropic/claude-sonnet-4-20250514", 3.00),
    ("claude-3-5-haiku", 0.25),
    ("anthropic/claude-3-5-haiku-latest", 0.25),
    ("groq/llama-3.3-70b-versatile", 0.59),
    ("minimax/minimax-m2.1", 0.30),
    ("moonshot/kimi-k2.5", 1.00),
    ("groq/llama-3.1-8b-instant", 0.05),
    ("ollama/*", 0.00),
];

pub const DEFAULT_RATE: f64 = 1.00;
/// Largest rate accepted from the pricing file (USD per 1,000 tokens).
pub const MAX_RATE: f64 = 1_000_000.0;
const MAX_NAME_CHARS: usize = 200;

/// A rate in micro-USD per 1,000 tokens. Costs are then whole nano-USD (`tokens × micros`), so sums are
/// exact integers whatever the order of addition; rates are kept to 6 decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Rate(u64);

impl Rate {
    /// `usd_per_1k` must be finite and non-negative (the pricing file is validated before this).
    pub fn from_usd_per_1k(usd_per_1k: f64) -> Self {
        Self((usd_per_1k.clamp(0.0, MAX_RATE) * 1e6).round() as u64)
    }

    pub fn usd_per_1k(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Cost of `tokens` tokens in nano-USD.
    pub fn cost_nanos(self, tokens: u64) -> u128 {
        u128::from(tokens) * u128::from(self.0)
    }
}

/// The pricing table in use: defaults merged with the operator's file.
#[derive(Debug, Clone)]
pub struct Pricing {
    /// Every entry as configured (lower-cased), for display.
    table: BTreeMap<String, Rate>,
    /// `provider/` prefixes of wildcard entries, longest first.
    prefixes: Vec<(String, Rate)>,
    /// (short name, rate) of the other entries, longest short name first, then by entry name.
    partial: Vec<(String, Rate)>,
    default: Rate,
}

impl Default for Pricing {
    fn default() -> Self {
        Self::build(DEFAULTS.iter().map(|(k, v)| (k.to_string(), Rate::from_usd_per_1k(*v))).collect(), None)
    }
}

impl Pricing {
    fn build(table: BTreeMap<String, Rate>, default: Option<Rate>) -> Self {
        let mut prefixes = Vec::new();
        let mut partial = Vec::new();
        for (name, rate) in &table {
            match name.strip_suffix('*') {
                Some(prefix) => prefixes.push((prefix.to_string(), *rate)),
                None => partial.push((short_name(name).to_string(), *rate)),
            }
        }
        prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        // A stable sort keeps the table's alphabetical order among equal lengths.
        partial.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        Self { table, prefixes, partial, default: default.unwrap_or(Rate::from_usd_per_1k(DEFAULT_RATE)) }
    }

    /// The defaults overridden and extended by the JSON object in `path` (model → USD per 1K tokens).
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let fail = |problem: String| format!("SVC_PRICING_PATH: {}: {problem}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read the file ({e})")))?;
        Self::from_json(&text).map_err(fail)
    }

    /// The defaults overridden and extended by a JSON object of model → USD per 1K tokens.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
        let object = value.as_object().ok_or("must be a JSON object of model name → rate per 1,000 tokens")?;
        let mut table: BTreeMap<String, Rate> =
            DEFAULTS.iter().map(|(k, v)| (k.to_string(), Rate::from_usd_per_1k(*v))).collect();
        let mut default = None;
        let mut seen = std::collections::BTreeSet::new();
        for (key, value) in object {
            let name = key.trim().to_lowercase();
            let rate = value
                .as_f64()
                .filter(|r| r.is_finite() && (0.0..=MAX_RATE).contains(r))
                .ok_or_else(|| format!("\"{key}\": the rate must be a number from 0 to {MAX_RATE}"))?;
            if !seen.insert(name.clone()) {
                return Err(format!("\"{key}\": listed twice (model names are case-insensitive)"));
            }
            if name == "*" {
                default = Some(Rate::from_usd_per_1k(rate));
                continue;
            }
            check_name(&name).map_err(|problem| format!("\"{key}\": {problem}"))?;
            table.insert(name, Rate::from_usd_per_1k(rate));
        }
        Ok(Self::build(table, default))
    }

    /// The rate for `model` (see the module docs for the lookup order).
    pub fn rate(&self, model: &str) -> Rate {
        let name = model.trim().to_lowercase();
        if let Some(rate) = self.table.get(&name) {
            return *rate;
        }
        if let Some((_, rate)) = self.prefixes.iter().find(|(prefix, _)| name.starts_with(prefix.as_str())) {
            return *rate;
        }
        if let Some((_, rate)) = self.partial.iter().find(|(short, _)| name.contains(short.as_str())) {
            return *rate;
        }
        self.default
    }

    /// USD per 1,000 tokens for `model`.
    pub fn price(&self, model: &str) -> f64 {
        self.rate(model).usd_per_1k()
    }

    /// Every entry (lower-cased names, wildcards as `provider/*`) with its rate in USD per 1K tokens.
    pub fn table(&self) -> BTreeMap<String, f64> {
        self.table.iter().map(|(k, v)| (k.clone(), v.usd_per_1k())).collect()
    }

    pub fn default_rate(&self) -> f64 {
        self.default.usd_per_1k()
    }
}

/// The part after the last `/`.
fn short_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the model name must not be empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("the model name must be at most {MAX_NAME_CHARS} characters"));
    }
    if let Some(prefix) = name.strip_suffix('*') {
        if !prefix.ends_with('/') || prefix.len() < 2 || prefix.contains('*') {
            return Err("a wildcard must have the form provider/*".into());
        }
    } else if name.contains('*') {
        return Err("a wildcard must have the form provider/*".into());
    } else if short_name(name).is_empty() {
        return Err("the model name must not end with /".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_decisions_table() {
        let p = Pricing::default();
        for (model, rate) in [
            ("claude-opus-4-5", 15.0),
            ("anthropic/claude-opus-4-5", 15.0),
            ("claude-sonnet-4", 3.0),
            ("anthropic/claude-sonnet-4-20250514", 3.0),
            ("claude-3-5-haiku", 0.25),
            ("anthropic/claude-3-5-haiku-latest", 0.25),
            ("groq/llama-3.3-70b-versatile", 0.59),
            ("minimax/minimax-m2.1", 0.30),
            ("moonshot/kimi-k2.5", 1.00),
            ("groq/llama-3.1-8b-instant", 0.05),
            ("ollama/llama3.1:8b", 0.0),
            ("ollama/llama-3.3-70b-versatile", 0.0),
            // Partial matches, both ways.
            ("anthropic/claude-sonnet-4", 3.0),
            ("claude-sonnet-4-5-20250929", 3.0),
            ("llama-3.1-8b-instant", 0.05),
            ("openrouter/minimax-m2.1", 0.30),
            ("CLAUDE-OPUS-4-5", 15.0),
            // The longest short name wins: claude-3-5-haiku-latest over claude-3-5-haiku (same rate here).
            ("bedrock/claude-3-5-haiku-latest", 0.25),
            ("gpt-unknown", 1.0),
            ("", 1.0),
        ] {
            assert_eq!(p.price(model), rate, "{model}");
        }
        assert_eq!(p.default_rate(), 1.0);
        assert_eq!(p.table().len(), DEFAULTS.len());
    }

    #[test]
    fn costs_are_exact_nano_dollars() {
        let rate = Rate::from_usd_per_1k(3.0);
        assert_eq!(rate.cost_nanos(15), 45_000_000); // 15 / 1000 × 3.00 = 0.045
        assert_eq!(Rate::from_usd_per_1k(0.59).cost_nanos(1000), 590_000_000);
        assert_eq!(Rate::from_usd_per_1k(0.05).cost_nanos(u64::MAX), u128::from(u64::MAX) * 50_000);
    }

    #[test]
    fn the_file_overrides_and_extends_the_defaults() {
        let p = Pricing::from_json(
            r#"{"claude-sonnet-4": 4.5, "openai/gpt-4o": 5, "gpt-4o-mini": 0.15, "lmstudio/*": 0, "*": 2}"#,
        )
        .unwrap();
        assert_eq!(p.price("claude-sonnet-4"), 4.5);
        assert_eq!(p.price("anthropic/claude-sonnet-4"), 4.5);
        assert_eq!(p.price("anthropic/claude-sonnet-4-20250514"), 3.0, "exact default entries stay");
        assert_eq!(p.price("gpt-4o"), 5.0);
        assert_eq!(p.price("azure/gpt-4o-mini-2024-07-18"), 0.15, "longest short name wins");
        assert_eq!(p.price("lmstudio/qwen"), 0.0);
        assert_eq!(p.price("mystery"), 2.0);
        assert_eq!(p.default_rate(), 2.0);
        assert_eq!(p.table()["openai/gpt-4o"], 5.0);
        assert!(!p.table().contains_key("*"));
    }

    #[test]
    fn bad_files_are_clear_errors() {
        for (json, needle) in [
            ("[1]", "must be a JSON object"),
            ("{oops", "not valid JSON"),
            (r#"{"m": -1}"#, "\"m\": the rate must be a number"),
            (r#"{"m": "3"}"#, "\"m\": the rate must be a number"),
            (r#"{"m": 2e9}"#, "\"m\": the rate must be a number"),
            (r#"{"": 1}"#, "must not be empty"),
            (r#"{"groq/": 1}"#, "must not end with /"),
            (r#"{"a*b": 1}"#, "provider/*"),
            (r#"{"/*": 1}"#, "provider/*"),
            (r#"{"Model": 1, "model": 2}"#, "listed twice"),
        ] {
            let err = Pricing::from_json(json).unwrap_err();
            assert!(err.contains(needle), "{json}: {err}");
        }
        let err = Pricing::from_file(Path::new("/nonexistent/pricing.json")).unwrap_err();
        assert!(err.starts_with("SVC_PRICING_PATH: /nonexistent/pricing.json: cannot read"), "{err}");
    }
}
