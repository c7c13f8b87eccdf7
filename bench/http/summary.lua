-- wrk script for throughput runs: prints wrk's own summary as one JSON line (no per-request
-- Lua work, so the load generator stays as fast as plain wrk).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"durationUs":%d,"bytes":%d,"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d,' ..
    '"p50Us":%d,"p99Us":%d,"maxUs":%d,"meanUs":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, latency.mean))
end
