-- POST /api/tasks with a unique title per request (durable creates).
local counter = 0
local thread_id = 0
function setup(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
function request()
  counter = counter + 1
  local body = string.format('{"title":"bench-%d-%d-%d","priority":"low"}', tid, counter, math.random(1, 1e9))
  return wrk.format("POST", "/api/tasks", {["Content-Type"] = "application/json", ["x-api-key"] = os.getenv("BENCH_KEY") or "bench-key"}, body)
end
