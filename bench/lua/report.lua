-- Appended to every script: one machine-readable line.
function done(summary, latency, requests)
  local secs = summary.duration / 1e6
  io.write(string.format("RESULT rps=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d non2xx=%d\n",
    summary.requests / secs, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
