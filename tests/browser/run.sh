#!/usr/bin/env bash
# Browser tests of the bundled dashboard: Debian's chromium driven by playwright-core against the real
# binary. Installs what it needs (chromium via apt, playwright-core via npm ci), builds the binary when
# needed, then runs the tests. Screenshots land in tests/browser/screenshots/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing chromium"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi

cd "$here"
echo "== npm ci"
npm ci --no-audit --no-fund

if [ -z "${OPSDECK_BIN:-}" ]; then
  echo "== cargo build"
  (cd "$root" && cargo build --locked --bin opsdeck)
  OPSDECK_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/opsdeck"
fi
export OPSDECK_BIN

echo "== browser tests ($OPSDECK_BIN)"
node --test --test-concurrency=1 dashboard.test.js
