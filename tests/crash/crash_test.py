#!/usr/bin/env python3
"""Crash test: drive concurrent writes at the real binary, kill -9 it at random moments, restart, and check
that every acknowledged write is there, the database opens every time, and webhook deliveries queued before a
crash are delivered after the restart. Loopback only; bounded rounds. Usage: crash_test.py BINARY [ROUNDS]"""
import http.server, json, os, random, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request

BIN = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
KEY = "crash-key"
random.seed(int(os.environ.get("CRASH_SEED", time.time())))


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


received = set()          # task titles seen by the webhook receiver
received_lock = threading.Lock()


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            title = json.loads(body)["data"]["data"]["title"]
            with received_lock:
                received.add(title)
        except Exception:
            pass
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")

    def log_message(self, *a):
        pass


hook_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
threading.Thread(target=hook_server.serve_forever, daemon=True).start()
hook_url = f"http://127.0.0.1:{hook_server.server_address[1]}/hook"

data = tempfile.mkdtemp(prefix="opsdeck-crash-")
port = free_port()
base = f"http://127.0.0.1:{port}"
env = dict(os.environ, NODE_ENV="development", SVC_DISABLE_RATE_LIMIT="1", API_KEY=KEY, AUTH_PASS="crash-password-1",
           SVC_DATA_DIR=data, PORT=str(port), HOSTNAME="127.0.0.1", AGW_GATEWAY_PORT="1", RUST_LOG="error",
           SVC_LOCAL_SESSIONS_DIR=data + "/none", AGW_HOME=data + "/none", SVC_ARGON2_MEMORY_KIB="1024")


def call(method, path, body=None, timeout=10):
    req = urllib.request.Request(base + path, method=method, headers={"x-api-key": KEY, "Content-Type": "application/json"},
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def start():
    proc = subprocess.Popen([BIN, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the service did not start: {proc.stderr.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(base + "/healthz", timeout=1).read(); return proc
        except Exception:
            time.sleep(0.02)
    raise SystemExit("the service did not answer within 20 s")


acked_tasks, acked_tokens = set(), 0
ack_lock = threading.Lock()


def writer(stop, wid):
    global acked_tokens
    n = 0
    while not stop.is_set():
        n += 1
        title = f"crash-{wid}-{n}-{random.randrange(1 << 30)}"
        try:
            if n % 3:
                call("POST", "/api/tasks", {"title": title}, timeout=5)
                with ack_lock:
                    acked_tasks.add(title)
            else:
                call("POST", "/api/tokens", {"model": "claude-sonnet-4", "sessionId": f"crash:{wid}", "inputTokens": 10, "outputTokens": 5}, timeout=5)
                with ack_lock:
                    acked_tokens += 1
        except Exception:
            pass  # not acknowledged: may or may not be there


proc = start()
call("POST", "/api/webhooks", {"name": "crash", "url": hook_url, "events": ["activity.task_created"]})
for round_no in range(1, ROUNDS + 1):
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(stop, f"{round_no}.{i}")) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(random.uniform(0.3, 1.5))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stop.set()
    for t in threads:
        t.join()
    proc = start()  # the database must open after every kill
    print(f"round {round_no}: killed and restarted; acknowledged so far: {len(acked_tasks)} tasks, {acked_tokens} token records", flush=True)

# Every acknowledged task is present.
present, offset = set(), 0
while True:
    page = call("GET", f"/api/tasks?limit=200&offset={offset}")
    present.update(t["title"] for t in page["tasks"])
    offset += 200
    if offset >= page["total"]:
        break
missing = acked_tasks - present
stats = call("GET", "/api/tokens?action=stats&timeframe=all")
records = stats["recordCount"]
# Every task's webhook delivery arrives (queued durably with the task; attempted after restarts).
deadline = time.time() + 60
while time.time() < deadline:
    with received_lock:
        undelivered = {t for t in present if t.startswith("crash-")} - received
    if not undelivered:
        break
    time.sleep(0.5)
if undelivered:
    hooks = call("GET", "/api/webhooks")["webhooks"]
    print("webhook state:", json.dumps(hooks))
    failed = [d for d in call("GET", "/api/webhooks/deliveries?limit=200")["deliveries"] if d["state"] != "success"]
    print("deliveries not successful:", json.dumps(failed[:10]))
proc.send_signal(signal.SIGTERM)
proc.wait(timeout=20)
print(f"rounds={ROUNDS} acknowledged_tasks={len(acked_tasks)} acknowledged_tokens={acked_tokens} "
      f"lost_tasks={len(missing)} token_records={records} undelivered_webhooks={len(undelivered)}")
ok = not missing and records >= acked_tokens and not undelivered
print(f"{'1 passed, 0 failed' if ok else '0 passed, 1 failed'}")
sys.exit(0 if ok else 1)
