// The example's per-IP limiter: in memory by default; with HYGIENE_REDIS_URL, one budget
// shared by every instance through Redis or Valkey (serve-hygiene/redis over node-redis,
// which runs on Node, Deno and Bun). The client connects at startup, bounded in time.
import { createFixedWindowLimiter, type EventSink, type FixedWindowLimiter, type SharedRateLimiter } from "../../src/mod.ts";
import { redactUrl, type EdgeConfig } from "./config.ts";

/** How long startup waits for Redis before giving up. */
export const REDIS_CONNECT_MS = 5_000;

/** Startup could not reach the shared store. */
export class StoreUnreachableError extends Error {
  override name = "StoreUnreachableError";
}

export interface IpLimiter {
  readonly limiter: FixedWindowLimiter | SharedRateLimiter;
  /** "memory" or "redis". */
  readonly store: "memory" | "redis";
  /** Ends the Redis connection, if any. */
  close(): void;
}

/**
 * The per-IP fixed window of `config`. With `config.redisUrl`: connects a node-redis client
 * (no offline queue, so a call made while Redis is down fails at once; the store's own
 * timeout, `config.redisTimeoutMs`, bounds the rest) and shares the window through it, failing as
 * `config.redisFailure` says and sizing the insurance limiter by `config.redisInstances`.
 * Throws {@linkcode StoreUnreachableError} when Redis does not answer within
 * {@linkcode REDIS_CONNECT_MS}.
 */
export async function createIpLimiter(config: EdgeConfig, onEvent: EventSink): Promise<IpLimiter> {
  const window = { name: "ip", limit: config.rateLimit, windowMs: config.rateWindowMs };
  if (config.redisUrl === undefined) return { limiter: createFixedWindowLimiter(window), store: "memory", close() {} };
  // Imported only when asked for: `redis` is an optional peer dependency.
  const [{ createClient }, { createRedisStore, fromNodeRedis }] = await Promise.all([import("redis"), import("../../src/redis/mod.ts")]);
  const client = createClient({ url: config.redisUrl, disableOfflineQueue: true, socket: { connectTimeout: REDIS_CONNECT_MS } });
  let lastError: unknown;
  // Reconnects are node-redis's own; the store's breaker decides what requests see meanwhile.
  client.on("error", (error: unknown) => (lastError = error));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnreachableError(
      `cannot reach ${redactUrl(config.redisUrl!)} within ${REDIS_CONNECT_MS} ms${lastError instanceof Error ? `: ${lastError.message}` : ""}`,
    )), REDIS_CONNECT_MS);
  });
  try {
    await Promise.race([client.connect(), late]);
  } catch (error) {
    client.destroy();
    throw error instanceof StoreUnreachableError ? error : new StoreUnreachableError(`cannot connect to ${redactUrl(config.redisUrl)}: ${(error as Error)?.message}`);
  } finally {
    clearTimeout(timer);
  }
  const store = createRedisStore({ client: fromNodeRedis(client), timeoutMs: config.redisTimeoutMs, onEvent });
  const limiter = createFixedWindowLimiter({ ...window, store, failure: config.redisFailure, expectedInstances: config.redisInstances });
  return { limiter, store: "redis", close: () => client.destroy() };
}
