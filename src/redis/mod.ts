/**
 * Limits shared across instances: a rate store over Redis or Valkey for the keyed limiters.
 * The client is injected (`fromNodeRedis` for the `redis` package — an optional peer
 * dependency — on Node, Deno and Bun, `fromNodeRedisCluster` for its cluster client;
 * `fromBunRedis` for Bun's built-in client); this module
 * imports neither. Give the store to `createFixedWindowLimiter({ store })` or
 * `createTokenBucketLimiter({ store })`: each check is one script call at the server's time,
 * bounded by a timeout, a cap on calls outstanding and a circuit breaker that falls back to
 * an in-memory insurance limiter; a key denied until T is denied locally until T.
 *
 * @example
 * ```ts
 * import { createTokenBucketLimiter } from "serve-hygiene";
 * import { createRedisStore, fromNodeRedis } from "serve-hygiene/redis";
 * // import { createClient } from "redis";
 * // const client = createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).on("error", log); // required: see fromNodeRedis
 * // await client.connect();
 * const client = { sendCommand: () => Promise.reject(new Error("connection refused")) }; // (Redis down)
 * const store = createRedisStore({ client: fromNodeRedis(client) });
 * const limiter = createTokenBucketLimiter({ name: "api", ratePerSecond: 10, burst: 20, store, failure: "closed" });
 * const decision = await limiter.take("tenant-42");
 * console.assert(!decision.allowed && decision.reason === "limiter-error");
 * ```
 *
 * @module
 */
export { fromBunRedis, fromNodeRedis, fromNodeRedisCluster } from "./client.ts";
export type { BunRedisLike, NodeRedisClusterLike, NodeRedisLike, RedisCommandClient } from "./client.ts";
export { createRedisStore } from "./store.ts";
export type { RedisStoreOptions } from "./store.ts";
