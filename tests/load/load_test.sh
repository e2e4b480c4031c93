#!/usr/bin/env bash
# Load test (CI): 64 concurrent clients for LOAD_SECONDS (default 60) against the real binary on loopback —
# no errors, memory flat — then the general rate limit holds its number exactly. Prints "N passed, N failed".
set -euo pipefail
BIN=${1:?usage: load_test.sh BINARY}
SECONDS_=${LOAD_SECONDS:-60}
here=$(cd "$(dirname "$0")" && pwd)
command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
ulimit -n 65536 2>/dev/null || true
passed=0; failed=0
check() { if eval "$2"; then passed=$((passed+1)); echo "ok   $1"; else failed=$((failed+1)); echo "FAIL $1"; fi; }

start() { # extra env..., sets pid url data
  data=$(mktemp -d); port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  url="http://127.0.0.1:$port"
  env NODE_ENV=development API_KEY=load-key AUTH_PASS=load-password-1 SVC_DATA_DIR="$data" PORT="$port" HOSTNAME=127.0.0.1 \
      AGW_GATEWAY_PORT=1 SVC_LOCAL_SESSIONS_DIR="$data/none" AGW_HOME="$data/none" RUST_LOG=error "$@" "$BIN" serve >/dev/null 2>&1 &
  pid=$!
  until curl -fs "$url/healthz" >/dev/null 2>&1; do sleep 0.02; done
}
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

# 1. Mixed load, 64 connections: reads of tasks and writes of tasks and token usage.
start SVC_DISABLE_RATE_LIMIT=1
cat > /tmp/opsdeck-load.lua <<'LUA'
local n = 0
local threads = 0
wrk.headers["x-api-key"] = "load-key"
wrk.headers["Content-Type"] = "application/json"
-- Each wrk thread has its own Lua state (and the same random seed): a thread id and the run's start time
-- keep titles unique across threads and runs.
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads .. "-" .. os.time())
end
function request()
  n = n + 1
  local r = n % 10
  if r == 0 then
    return wrk.format("POST", "/api/tasks", nil, string.format('{"title":"load-%s-%d-%d"}', tid, n, math.random(1, 1e9)))
  elseif r == 1 then
    return wrk.format("POST", "/api/tokens", nil, '{"model":"claude-sonnet-4","sessionId":"load:s","inputTokens":10,"outputTokens":5}')
  elseif r < 6 then
    return wrk.format("GET", "/api/tasks?limit=50")
  else
    return wrk.format("GET", "/api/agents")
  end
end
function done(summary, latency, requests)
  io.write(string.format("RESULT requests=%d errors=%d non2xx=%d p99_ms=%.2f\n", summary.requests,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status,
    latency:percentile(99) / 1000))
end
LUA
wrk -t2 -c64 -d10s -s /tmp/opsdeck-load.lua "$url" >/dev/null   # warm-up: caches, allocator
rss_before=$(rss)
out=$(wrk -t2 -c64 -d"${SECONDS_}s" --latency -s /tmp/opsdeck-load.lua "$url" | grep RESULT)
rss_after=$(rss)
echo "$out; RSS ${rss_before} kB -> ${rss_after} kB"
requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$out")
errors=$(sed -E 's/.*errors=([0-9]+).*/\1/' <<<"$out"); non2xx=$(sed -E 's/.*non2xx=([0-9]+).*/\1/' <<<"$out")
check "64 clients for ${SECONDS_} s: $requests requests, no errors" "[ $errors = 0 ] && [ $non2xx = 0 ] && [ $requests -gt 0 ]"
check "memory flat under load (${rss_before} kB -> ${rss_after} kB, < +50%)" "[ $rss_after -lt $((rss_before * 3 / 2 + 10240)) ]"
kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$data"

# 2. The general limit holds its number: 100 per minute per IP, the 101st and later are 429.
start SVC_RATE_LIMIT_PER_MINUTE=100
codes=$(for i in $(seq 1 130); do curl -s -o /dev/null -w '%{http_code}\n' -H 'x-api-key: load-key' "$url/api/auth/me"; done | sort | uniq -c | tr -s ' ')
echo "rate limit answers:$(tr '\n' ';' <<<"$codes")"
ok200=$(awk '$2==200 {print $1}' <<<"$codes"); tooMany=$(awk '$2==429 {print $1}' <<<"$codes")
check "rate limiter holds 100/min (200: ${ok200:-0}, 429: ${tooMany:-0})" "[ \"${ok200:-0}\" = 100 ] && [ \"${tooMany:-0}\" = 30 ]"
kill "$pid"; wait "$pid" 2>/dev/null || true; rm -rf "$data"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
