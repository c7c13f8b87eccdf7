// The Lua of the Redis store: one fragment per algorithm, mirroring the in-memory limiters'
// arithmetic step for step (same IEEE doubles, same order of operations, state written with
// %.17g so it reads back exactly), so a shared limiter answers as the in-memory one would at
// the server's time. One departure: TIME is the server's wall clock, which can go back, where
// the in-memory limiters' clock cannot; state stored in the server's future is taken as a
// budget that has come back. A call's script is the driver plus the fragments of the algorithms it
// uses: one script per algorithm, and one for a scoped call that mixes them.
//
// KEYS[i]: the budget of check i. ARGV: 5 per check: kind ("f" | "t"), cost, limit (burst),
// windowMs (burst × interval), intervalMs. Every budget is checked first at one TIME; only if
// all admit is each charged. Reply: { TIME's seconds, its microseconds, then per check:
// allowed (1 | 0), retryAfterMs,
// remaining, resetMs }; the times as %.17g strings (a Lua number reaches the client as an
// integer reply, truncated), the integers as integers.

/**
 * Fixed window: a hash { s = the window's start (server ms), c = the count }, expiring after its
 * window. An entry that cannot be read (another type under the name, a start that is no number,
 * a count that is no integer HINCRBY takes: something else wrote there) is as none, and the
 * admit writes a fresh one: raised as an error, it failed every call of that key, for good (it
 * had no expiry), and a client that was most of the traffic held the store in its fallback for
 * every client (the shared-limits review).
 */
const FIXED_WINDOW = `
local function fixed_window(key, now, cost, limit, window)
  local v = redis.pcall('HMGET', key, 's', 'c')
  if v.err then
    redis.call('DEL', key)
    v = {}
  end
  -- The count as HINCRBY reads it (digits only: Lua's tonumber also takes "1.5", " 5", "1e3",
  -- on which HINCRBY then failed, after the call's other budgets were charged: a review).
  local start, count = tonumber(v[1]), v[2] and string.match(v[2], '^%d+$') and tonumber(v[2])
  if start and count then
    local elapsed = now - start
    -- A start after now: the server's clock went back (an NTP step, a failover to a replica
    -- behind). That window has ended: kept, its count and its expiry, set by the old clock,
    -- would refuse the key for as long as the step (a review: an hour's 429s).
    if elapsed >= 0 and elapsed < window then
      local reset = window
      if elapsed > 0 then reset = window - elapsed end
      if count + cost > limit then return false, reset, limit - count, reset, nil end
      return true, 0, limit - count - cost, reset, function() redis.call('HINCRBY', key, 'c', cost) end
    end
  end
  return true, 0, limit - cost, window, function()
    redis.call('HSET', key, 's', fmt(now), 'c', cost)
    redis.call('PEXPIRE', key, math.ceil(window) + MARGIN)
  end
end
`;

/** Token bucket (GCRA): one number, the theoretical arrival time, expiring when the bucket is full again. An entry that cannot be read is as none (as the fixed window's). */
const TOKEN_BUCKET = `
local function remaining_at(now, tat, tolerance, interval)
  local r = math.floor((now + tolerance - tat + slack(now, interval)) / interval)
  if r > 0 then return r end
  return 0
end
local function token_bucket(key, now, cost, tolerance, interval)
  local stored = redis.pcall('GET', key)
  if type(stored) == 'table' and stored.err then
    redis.call('DEL', key)
    stored = false
  end
  local tat = now
  local st = stored and tonumber(stored)
  if st then
    -- An admitted take stores at most now + tolerance (+ slack): a later one means the server's
    -- clock went back, and the bucket is full again, not empty for as long as the step.
    if st > now + tolerance + interval then tat = now elseif st > now then tat = st end
  end
  local nxt = tat + cost * interval
  local allow_at = nxt - tolerance
  if now + slack(now, interval) < allow_at then
    return false, allow_at - now, remaining_at(now, tat, tolerance, interval), tat - now, nil
  end
  return true, 0, remaining_at(now, nxt, tolerance, interval), nxt - now, function()
    redis.call('SET', key, fmt(nxt), 'PX', math.ceil(nxt - now) + MARGIN)
  end
end
`;

// No redis.replicate_commands(): Redis 5+ and Valkey replicate a script's effects, so TIME
// before a write is allowed (calling it cost ~1 µs a call).
const PRELUDE = `
local SLACK = 1e-6
-- The token bucket's slack grows with the time's size, up to half an interval (token_bucket.ts,
-- _slack): TIME is epoch ms.
local function slack(now, interval) return math.min(SLACK + math.abs(now) * 2^-46, interval / 2) end
local MARGIN = 1000
local function fmt(x)
  if x == 0 then return '0' end
  return string.format('%.17g', x)
end
`;

const DRIVER = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
-- TIME's own strings: the client computes \`now\` as above (formatting it here cost ~3 µs a call).
local out = { t[1], t[2] }
local commits = {}
local all = true
for i = 1, #KEYS do
  local b = (i - 1) * 5
  local kind = ARGV[b + 1]
  local cost, limit, window, interval = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), tonumber(ARGV[b + 5])
  local ok, retry, remaining, reset, commit
  if kind == 'f' then ok, retry, remaining, reset, commit = fixed_window(KEYS[i], now, cost, limit, window)
  elseif kind == 't' then ok, retry, remaining, reset, commit = token_bucket(KEYS[i], now, cost, window, interval)
  else error('unknown algorithm ' .. tostring(kind)) end
  if not ok then all = false end
  commits[i] = commit
  -- allowed and remaining are integers, exact as integer replies; the times need %.17g.
  out[#out + 1] = ok and 1 or 0
  out[#out + 1] = fmt(retry)
  out[#out + 1] = remaining
  out[#out + 1] = fmt(reset)
end
if all then for i = 1, #KEYS do commits[i]() end end
return out
`;

/** The script of a call using these algorithms ("f": fixed window, "t": token bucket). */
export function _script(kinds: { f: boolean; t: boolean }): string {
  // An absent fragment leaves its name nil: a call never asks for an algorithm its script lacks.
  const fixed = kinds.f ? FIXED_WINDOW : "local fixed_window = nil\n";
  const bucket = kinds.t ? TOKEN_BUCKET : "local token_bucket = nil\n";
  return PRELUDE + fixed + bucket + DRIVER;
}
