#!/usr/bin/env bash
# OpsDeck load run on loopback — one command: `bash bench/run.sh`.
# Installs wrk (Debian) when missing, builds the release binary, starts it with SVC_DISABLE_RATE_LIMIT=1 on
# a free 127.0.0.1 port with a temp data dir, runs the scenarios of DESIGN.md and prints one table, which it
# also writes to bench/RESULTS.md. Benchmarks report numbers; nothing here asserts a timing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
DURATION=${BENCH_DURATION:-10}
CONNS=${BENCH_CONNECTIONS:-32}
ulimit -n 65536 2>/dev/null || true

command -v wrk >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
echo "== release build"
cargo build --release --locked --bin opsdeck 2>&1 | tail -1
cargo bench --locked --no-run --bench sse_fanout --bench tokens_stats 2>&1 | tail -1 # the SSE client and the token-stats bench, built before any timing
BIN="${CARGO_TARGET_DIR:-$root/target}/release/opsdeck"

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$data"; }
trap cleanup EXIT

rss_mb() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$pid/status"; }
peak_mb() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$pid/status"; }

# Starts the server and prints the milliseconds from the start to the first 200 of /healthz.
start_server() {
  local start_ns
  start_ns=$(date +%s%N)
  env NODE_ENV=development SVC_DISABLE_RATE_LIMIT=1 API_KEY=bench-key AUTH_PASS=bench-password-1 \
      SVC_DATA_DIR="$data" PORT="$port" HOSTNAME=127.0.0.1 AGW_GATEWAY_PORT=1 \
      SVC_LOCAL_SESSIONS_DIR="$data/none" AGW_HOME="$data/none" RUST_LOG=warn "$BIN" serve >>"$data/server.log" 2>&1 &
  pid=$!
  until curl -fs "$url/healthz" >/dev/null 2>&1; do sleep 0.001; done
  echo $(( ($(date +%s%N) - start_ns) / 1000000 ))
}
start_server >"$data/startup" # first start: creates the database and hashes the admin's password (Argon2id)
startup_ms=$(cat "$data/startup")
sleep 1
idle_rss=$(rss_mb)
size_mb=$(python3 -c "import os; print(f'{os.path.getsize(\"$BIN\")/1048576:.1f}')")

rows=()
row() { rows+=("| $1 | $2 | $3 | $4 | $5 |"); printf '%-44s %10s %9s %9s %8s\n' "$1" "$2" "$3" "$4" "$5"; }
run_wrk() { # name, script, path
  local out
  out=$(cd bench/lua && cat "$2" report.lua > /tmp/opsdeck-bench.lua && wrk -t2 -c"$CONNS" -d"${DURATION}s" --latency -s /tmp/opsdeck-bench.lua "$url$3" 2>&1 | grep RESULT)
  local rps p50 p99 errors non2xx
  rps=$(sed -E 's/.*rps=([0-9.]+).*/\1/' <<<"$out"); p50=$(sed -E 's/.*p50_ms=([0-9.]+).*/\1/' <<<"$out")
  p99=$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<<"$out"); errors=$(sed -E 's/.*errors=([0-9]+).*/\1/' <<<"$out")
  non2xx=$(sed -E 's/.*non2xx=([0-9]+).*/\1/' <<<"$out")
  row "$1 (c=$CONNS)" "$rps" "$p50" "$p99" "$(rss_mb) MB"
  [ "$errors" = 0 ] && [ "$non2xx" = 0 ] || echo "   !! errors=$errors non-2xx=$non2xx"
}

printf '%-44s %10s %9s %9s %8s\n' scenario req/s p50_ms p99_ms RSS
run_wrk "POST /api/tasks (durable creates)" create_task.lua /api/tasks
have=$(curl -fs -H 'x-api-key: bench-key' "$url/api/tasks?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
if [ "$have" -lt 10000 ]; then
  python3 - "$url" "$have" <<'PY'
import json, sys, urllib.request, concurrent.futures as cf
url, have = sys.argv[1], int(sys.argv[2])
def post(i):
    body = json.dumps({"title": f"seed-{i}"}).encode()
    urllib.request.urlopen(urllib.request.Request(url + "/api/tasks", data=body, method="POST",
        headers={"Content-Type": "application/json", "x-api-key": "bench-key"})).read()
with cf.ThreadPoolExecutor(32) as ex: list(ex.map(post, range(10000 - have)))
PY
fi
tasks=$(curl -fs -H 'x-api-key: bench-key' "$url/api/tasks?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
run_wrk "GET /api/tasks?limit=50 ($tasks tasks)" get.lua "/api/tasks?limit=50"
run_wrk "GET /api/tasks/{id}" get.lua "/api/tasks/5000"
run_wrk "POST /api/tokens (durable, rollups)" record_tokens.lua /api/tokens
run_wrk "GET /api/tokens?action=stats" get.lua "/api/tokens?action=stats&timeframe=all"
fan=$(cargo bench --locked --bench sse_fanout -- "$port" 1000 20 2>/dev/null | grep RESULT)
row "SSE fan-out to 1,000 clients (change → last)" "-" "$(sed -E 's/.*p50_ms=([0-9.]+).*/\1/' <<<"$fan")" "$(sed -E 's/.*p99_ms=([0-9.]+).*/\1/' <<<"$fan")" "$(rss_mb) MB"
loaded_peak=$(peak_mb)
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
# Restart over the data the run left (tens of thousands of tasks and token records): the usual start.
start_server >"$data/restart"
restart_ms=$(cat "$data/restart")
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

echo "== token stats over 1,000,000 records (bench/tokens_stats.rs)"
tokens_out=$(cargo bench --locked --bench tokens_stats 2>/dev/null)
echo "$tokens_out" | sed -n '/^store/,$p'
stats_http=$(grep -E 'action=stats&timeframe=all' <<<"$tokens_out" | head -1 | sed -E 's/^ *//')

{
  echo "# OpsDeck benchmark results"
  echo
  echo "Run: $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM,"
  echo "$(uname -sr); loopback; wrk -t2 -c$CONNS -d${DURATION}s; SVC_DISABLE_RATE_LIMIT=1; release build."
  echo
  echo "| scenario | req/s | p50 ms | p99 ms | RSS after |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| measure | value |"
  echo "|---|---|"
  echo "| first start to first 200 (\`/healthz\`; creates the database, hashes the admin password) | ${startup_ms} ms |"
  echo "| restart to first 200 (over the data of this run) | ${restart_ms} ms |"
  echo "| idle RSS | ${idle_rss} MB |"
  echo "| peak RSS under the load above | ${loaded_peak} MB |"
  echo "| binary size (release, dynamically linked) | ${size_mb} MB |"
  echo "| token stats, 1,000,000 records, HTTP (median / p95 / max) | ${stats_http:-see below} |"
  echo
  echo '```'
  echo "$tokens_out" | sed -n '/records/,$p'
  echo '```'
} > bench/RESULTS.md.new
echo
echo "first start ${startup_ms} ms · restart ${restart_ms} ms · idle RSS ${idle_rss} MB · peak RSS ${loaded_peak} MB · binary ${size_mb} MB"
mv bench/RESULTS.md.new bench/RESULTS.md.run
echo "raw results: bench/RESULTS.md.run (bench/RESULTS.md adds the notes)"
