-- wrk script for overload runs: every request carries its send time (x-t, microseconds of
-- CLOCK_MONOTONIC), the server echoes it, and each 2xx response is timed on arrival — so
-- the latency figures cover admitted requests only (wrk's own histogram mixes in the 503s).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clk_id, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000000 + math.floor(tonumber(ts.tv_nsec) / 1000)
end

-- Pacing (`wrk … url -- <rate> [<startMs>]`): requests are sent on a schedule of <rate> per
-- second across the thread's connections (a connection waits for its slot), so the offered
-- load is that rate rather than a closed loop — the "half of capacity" runs. "-" or 0: no
-- pacing. <startMs>: every connection's first request waits until <startMs> after the first
-- one was due, so an idle server accepts all the connections before any work arrives (Node
-- accepts one connection per loop turn: under load it would leave some of them in the
-- kernel's accept queue for the whole run, and face fewer clients than the others). Unpaced,
-- the held requests then go over the next SPREAD_MS at random, as clients that arrive at
-- their own times (all at one instant, they would stay in step: refused together, back together).
local period_ms = nil
local next_slot = 0
local start_ms = 0
local start_at = nil
local SPREAD_MS = 500
local first_us = nil -- when the run's first request was due (the end of the hold)
init = function(args)
  if args[1] and args[1] ~= "-" and tonumber(args[1]) > 0 then period_ms = 1000 / tonumber(args[1]) end
  if args[2] then start_ms = tonumber(args[2]) end
end
delay = function()
  local now = now_us() / 1000
  if not start_at then
    start_at = now + start_ms
    next_slot = start_at -- paced, the held first requests take their slots from the end of the hold
    -- The run starts when the held requests go (wrk may call request() once at setup, earlier).
    first_us = math.floor(start_at * 1000)
  end
  if not period_ms then
    if now < start_at then return math.ceil(start_at - now + math.random() * SPREAD_MS) end
    return 0
  end
  if next_slot < now then next_slot = now end
  local d = next_slot - now
  next_slot = next_slot + period_ms
  return math.floor(d)
end

-- Per thread: histogram of 2xx latency in 10 µs buckets, and status counts. `steady` holds
-- the requests sent 1 s or more after the thread's first: a server that accepts connections
-- slowly while busy (Node accepts one per loop turn) makes the requests of the connections it
-- accepts last wait in the kernel's accept queue at the start; this shows the run without them.
hist = {}
steady = {}
ok, refused, other, untimed = 0, 0, 0, 0
local STEADY_AFTER_US = 1000000

request = function()
  local t = now_us()
  if not first_us then first_us = t end
  return wrk.format(nil, nil, { ["x-t"] = tostring(t) })
end

response = function(status, headers, body)
  if status >= 200 and status < 300 then
    ok = ok + 1
    local sent = tonumber(headers["x-t"] or headers["X-T"])
    if sent then
      local bucket = math.floor((now_us() - sent) / 10)
      hist[bucket] = (hist[bucket] or 0) + 1
      if first_us and sent - first_us >= STEADY_AFTER_US then steady[bucket] = (steady[bucket] or 0) + 1 end
    else
      untimed = untimed + 1
    end
  elseif status == 503 then
    refused = refused + 1
  else
    other = other + 1
  end
end

local threads = {}
setup = function(thread)
  table.insert(threads, thread)
end

done = function(summary, latency, requests)
  local merged, merged_steady, counts = {}, {}, { ok = 0, refused = 0, other = 0, untimed = 0 }
  for _, t in ipairs(threads) do
    for k, _ in pairs(counts) do counts[k] = counts[k] + t:get(k) end
    for b, c in pairs(t:get("hist")) do merged[b] = (merged[b] or 0) + c end
    for b, c in pairs(t:get("steady")) do merged_steady[b] = (merged_steady[b] or 0) + c end
  end
  local parts, steady_parts = {}, {}
  for b, c in pairs(merged) do table.insert(parts, string.format("[%d,%d]", b * 10, c)) end
  for b, c in pairs(merged_steady) do table.insert(steady_parts, string.format("[%d,%d]", b * 10, c)) end
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests":%d,"durationUs":%d,"non2xx":%d,"connectErrors":%d,"readErrors":%d,"writeErrors":%d,"timeouts":%d,' ..
    '"ok":%d,"refused":%d,"other":%d,"untimed":%d,"okHistUs":[%s],"okHistSteadyUs":[%s]}\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    counts.ok, counts.refused, counts.other, counts.untimed, table.concat(parts, ","), table.concat(steady_parts, ",")))
end
