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
} from "../core/mod.ts";
import type { RedisCommandClient } from "./client.ts";
import { _keyHash } from "./_key_hash.ts";
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
  prefix?: string;
}

const what = "create redis store";

/** Whether a rejection is Redis's NOSCRIPT (the script cache lost our script). */
const _noScript = (error: unknown) => /NOSCRIPT/.test(String((error as Error | undefined)?.message ?? error));

function _reply(raw: unknown, count: number): RateStoreReply {
  if (!Array.isArray(raw) || raw.length !== 1 + 4 * count) {
    throw new TypeError(`The Redis script answered ${_show(raw)}, not ${1 + 4 * count} values`);
  }
  const results: RateStoreResult[] = [];
  for (let i = 0; i < count; i++) {
    const b = 1 + 4 * i;
    results.push({
      allowed: String(raw[b]) === "1",
      retryAfterMs: Number(raw[b + 1]),
      remaining: Number(raw[b + 2]),
      resetMs: Number(raw[b + 3]),
    });
  }
  return { now: Number(raw[0]), results };
}

/** The backend alone (no bounds): for tests, and for callers that bound it themselves. */
export function _redisBackend(client: RedisCommandClient, prefix: string): RateStoreBackend {
  // The SHA of each script, once loaded (or being loaded); dropped on NOSCRIPT.
  const loaded = new Map<string, Promise<string>>();
  const load = (source: string, stale?: Promise<string>): Promise<string> => {
    const held = loaded.get(source);
    // Concurrent calls that all saw NOSCRIPT reload once.
    if (held !== undefined && held !== stale) return held;
    const sha = client.sendCommand(["SCRIPT", "LOAD", source]).then(String);
    loaded.set(source, sha);
    sha.catch(() => loaded.get(source) === sha && loaded.delete(source));
    return sha;
  };
  const nameOf = (c: RateStoreCheck) => `${prefix}${c.algorithm === "fixed-window" ? "fw" : "tb"}:${c.limiter}:${_keyHash(c.key)}`;

  return {
    async take(checks) {
      const kinds = { f: false, t: false };
      const args: string[] = [];
      const names: string[] = [];
      for (const c of checks) {
        if (c.algorithm === "fixed-window") kinds.f = true;
        else kinds.t = true;
        names.push(nameOf(c));
        args.push(c.algorithm === "fixed-window" ? "f" : "t", String(c.cost), String(c.limit), String(c.windowMs), String(c.intervalMs));
      }
      const source = _script(kinds);
      const run = (sha: string) => client.sendCommand(["EVALSHA", sha, String(names.length), ...names, ...args]);
      let sha = load(source);
      let raw: unknown;
      try {
        raw = await run(await sha);
      } catch (error) {
        if (!_noScript(error)) throw error;
        sha = load(source, sha);
        raw = await run(await sha);
      }
      return _reply(raw, checks.length);
    },
  };
}

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
 * // const client = await createClient({ url: "redis://127.0.0.1:6379", disableOfflineQueue: true }).connect();
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
  const { client, prefix = "hygiene:", ...bounds } = options;
  if (typeof client?.sendCommand !== "function") {
    throw new TypeError(`Cannot ${what} as "client" must have a sendCommand(args) method (fromNodeRedis, fromBunRedis): current value is ${_show(client)}`);
  }
  if (typeof prefix !== "string" || prefix.length > 64) {
    throw new TypeError(`Cannot ${what} as "prefix" must be a string of at most 64 characters: current value is ${_show(prefix)}`);
  }
  return createRateStore(_redisBackend(client, prefix), { name: "redis", ...bounds });
}
