// The Redis backend of a rate store: each call is one EVALSHA of the script for its
// algorithms (loaded once with SCRIPT LOAD, reloaded when Redis answers NOSCRIPT: after a
// restart, a SCRIPT FLUSH or an eviction), at the server's time, under hashed key names.
// The bounds (timeout, calls outstanding, breaker) are the core's createRateStore.
import {
  _show,
  createRateStore,
  type RateStore,
  type RateStoreBackend,
  type RateStoreCheck,
  type RateStoreOptions,
  type RateStoreReply,
  type RateStoreResult,
  type _KeyList,
  _onlyKnown,
  _keyHash,
} from "../core/mod.ts";
import type { RedisCommandClient } from "./client.ts";
import { _script } from "./_scripts.ts";

/** Options of {@linkcode createRedisStore}; the bounds are {@linkcode RateStoreOptions}'. */
export interface RedisStoreOptions extends RateStoreOptions {
  /** The connected client, bound with `fromNodeRedis` or `fromBunRedis` (or anything with `sendCommand`). */
  client: RedisCommandClient;
  /**
   * Starts every key name: `<prefix><fw|tb>:<limiter name>:<hash of the client key>`. Put a
   * hash tag in it (`"{hygiene}:"`) to keep every key of a scoped call in one cluster slot.
   * @default "hygiene:"
   */
  prefix?: string | undefined;
}

const what = "create redis store";

/** Whether a rejection is Redis's NOSCRIPT (the script cache lost our script). */
const _noScript = (error: unknown) => /NOSCRIPT/.test(String((error as Error | undefined)?.message ?? error));

function _reply(raw: unknown, count: number): RateStoreReply {
  if (!Array.isArray(raw) || raw.length !== 2 + 4 * count) {
    throw new TypeError(`The Redis script answered ${_show(raw)}, not ${2 + 4 * count} values`);
  }
  const results: RateStoreResult[] = [];
  for (let i = 0; i < count; i++) {
    const b = 2 + 4 * i;
    results.push({
      allowed: String(raw[b]) === "1",
      retryAfterMs: Number(raw[b + 1]),
      remaining: Number(raw[b + 2]),
      resetMs: Number(raw[b + 3]),
    });
  }
  // The script's own arithmetic (tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000), so the time
  // reported is the very number its decisions used.
  return { now: Number(raw[0]) * 1000 + Number(raw[1]) / 1000, results };
}

/** The backend alone (no bounds): for tests, and for callers that bound it themselves. */
export function _redisBackend(client: RedisCommandClient, prefix: string): RateStoreBackend {
  // By the algorithms a call uses (1: fixed window, 2: token bucket, 3: both): the script,
  // built once, and its SHA once loaded (kept as a string, so a call waits for nothing else).
  const sources = [_script({ f: true, t: false }), _script({ f: true, t: false }), _script({ f: false, t: true }), _script({ f: true, t: true })];
  const shas: (string | undefined)[] = [];
  const loading: (Promise<string> | undefined)[] = [];
  const load = (kinds: number): Promise<string> => {
    // Concurrent calls that all miss (or all saw NOSCRIPT) load once.
    const held = loading[kinds];
    if (held !== undefined) return held;
    const sha = client.sendCommand(["SCRIPT", "LOAD", sources[kinds]!]).then(
      (r) => ((loading[kinds] = undefined), (shas[kinds] = String(r))),
      (error: unknown) => {
        loading[kinds] = undefined;
        throw error;
      },
    );
    loading[kinds] = sha;
    return sha;
  };

  return {
    take(checks) {
      let kinds = 0;
      const n = checks.length;
      const command: string[] = ["EVALSHA", "", String(n)];
      for (let i = 0; i < n; i++) {
        const c = checks[i]!;
        const fixed = c.algorithm === "fixed-window";
        kinds |= fixed ? 1 : 2;
        command.push(`${prefix}${fixed ? "fw" : "tb"}:${c.limiter}:${_keyHash(c.key)}`);
      }
      for (let i = 0; i < n; i++) {
        const c = checks[i]!;
        command.push(c.algorithm === "fixed-window" ? "f" : "t", String(c.cost), String(c.limit), String(c.windowMs), String(c.intervalMs));
      }
      const run = (sha: string) => {
        command[1] = sha;
        return client.sendCommand(command);
      };
      const read = (raw: unknown) => _reply(raw, n);
      const known = shas[kinds];
      if (known === undefined) return load(kinds).then(run).then(read);
      return run(known).then(read, (error: unknown) => {
        if (!_noScript(error)) throw error;
        // Redis lost the script (a restart, SCRIPT FLUSH, an eviction): load it again, once.
        if (shas[kinds] === known) shas[kinds] = undefined;
        return load(kinds).then(run).then(read);
      });
    },
  };
}

/** Every option of {@linkcode RedisStoreOptions}: any other key is refused. */
const REDIS_STORE_KEYS: _KeyList<RedisStoreOptions> = { client: true, prefix: true, name: true, timeoutMs: true, maxPending: true, fallbackAfter: true, probeIntervalMs: true, clock: true, onEvent: true };

/**
 * Creates a rate store over Redis or Valkey (any version with Lua scripting: Redis 5+,
 * Valkey 7+). Each check is one EVALSHA; budgets are timed by the server's clock (`TIME`),
 * so instances with skewed clocks agree; a fixed window is a hash (start, count) that
 * expires after its window, a token bucket one timestamp (its TAT) that expires when the
 * bucket is full again. Key names are the prefix, the algorithm, the limiter's name and a
 * hash of the client key. Every call is bounded as {@linkcode RateStoreOptions} says.
 *
 * @example One budget of 600 requests a minute per client, across every instance
 * ```ts
 * import { createFixedWindowLimiter } from "serve-hygiene";
 * import { createRedisStore, fromNodeRedis } from "serve-hygiene/redis";
 * // const client = createClient({ url: "redis://127.0.0.1:6379", disableOfflineQueue: true }).on("error", log); // required: see fromNodeRedis
 * // await client.connect();
 * const client = { sendCommand: () => new Promise<unknown>(() => {}) }; // (a Redis that never answers)
 * const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: 50 });
 * const limiter = createFixedWindowLimiter({ name: "ip", limit: 600, windowMs: 60_000, store, failure: "open", expectedInstances: 4 });
 * const decision = await limiter.take("203.0.113.7"); // fails open after 50 ms
 * console.assert(decision.allowed);
 * ```
 */
export function createRedisStore(options: RedisStoreOptions): RateStore {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(`Cannot ${what} as the options must be an object: current value is ${_show(options)}`);
  }
  _onlyKnown(what, options, REDIS_STORE_KEYS);
  const { client, prefix = "hygiene:", ...bounds } = options;
  if (typeof client?.sendCommand !== "function") {
    throw new TypeError(`Cannot ${what} as "client" must have a sendCommand(args) method (fromNodeRedis, fromBunRedis): current value is ${_show(client)}`);
  }
  if (typeof prefix !== "string" || prefix.length > 64) {
    throw new TypeError(`Cannot ${what} as "prefix" must be a string of at most 64 characters: current value is ${_show(prefix)}`);
  }
  return createRateStore(_redisBackend(client, prefix), { ...bounds, name: bounds.name ?? "redis" });
}
