-- POST /api/tokens (durable writes with rollup maintenance).
local counter = 0
function request()
  counter = counter + 1
  local body = string.format('{"model":"claude-sonnet-4","sessionId":"bench:s%d","inputTokens":%d,"outputTokens":%d}', counter % 50, 100 + counter % 900, 50)
  return wrk.format("POST", "/api/tokens", {["Content-Type"] = "application/json", ["x-api-key"] = "bench-key"}, body)
end
