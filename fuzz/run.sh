#!/usr/bin/env bash
# Fuzzes every target briefly: `bash fuzz/run.sh` (FUZZ_SECONDS per target, default 30). Needs the nightly
# toolchain (on the machine) and cargo-fuzz (installed when missing). Each run starts from the seeds in
# fuzz/seeds/<target>/ plus every kept input in fuzz/regressions/<target>/, in a throw-away corpus. An input that
# makes a target fail is copied into fuzz/regressions/<target>/, where `cargo test` (tests/fuzz_regressions.rs)
# replays it from then on: commit it with the fix. Exits non-zero when any target failed.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
command -v cargo-fuzz >/dev/null || cargo install --locked --quiet cargo-fuzz@0.13.2
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal

targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^opsdeck-fuzz$')
echo "== build (nightly, AddressSanitizer, optimized)"
cargo +nightly fuzz build -O 2>&1 | tail -1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
for target in $targets; do
  mkdir -p "$work/$target" "$work/artifacts/$target" "regressions/$target"
  log="$work/$target.log"
  if cargo +nightly fuzz run -O "$target" "$work/$target" "seeds/$target" "regressions/$target" -- \
      -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$work/artifacts/$target/" >"$log" 2>&1; then
    passed=$((passed + 1))
    echo "ok   $target: $(grep -E '^Done [0-9]+ runs' "$log" | tail -1), $(find "$work/$target" -type f | wc -l) corpus inputs"
  else
    failed=$((failed + 1))
    echo "FAIL $target"
    grep -E 'panicked|ERROR|SUMMARY' "$log" | head -5 || tail -20 "$log"
    for artifact in "$work/artifacts/$target"/*; do
      [ -f "$artifact" ] && cp "$artifact" "regressions/$target/" && echo "     kept fuzz/regressions/$target/$(basename "$artifact")"
    done
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
