// serve-hygiene's shared limiter as subjects of the Redis part (bench/http/redis_checks.ts):
// the fixed window in Redis through serve-hygiene/redis over the same node-redis client as
// rate-limiter-flexible, with its denied-key cache (the default) and without it.
import { createFixedWindowLimiter } from "../../src/mod.ts";
import { createRedisStore, fromNodeRedis, type NodeRedisLike } from "../../src/redis/mod.ts";
import type { Subject } from "./redis_checks.ts";

/**
 * A generous store timeout: the bench measures the round-trip, not the failure path; a
 * check that still failed is counted as a denial of a limit out of reach, and reported.
 */
const TIMEOUT_MS = 1_000;

export function sharedSubjects(client: NodeRedisLike): Subject[] {
  const subject = (cache: boolean): Subject => ({
    name: `serve-hygiene fixed window in Redis${cache ? "" : ", denied-key cache off"}`,
    redis: true,
    make(limit, windowMs, prefix) {
      const store = createRedisStore({ client: fromNodeRedis(client), prefix: `sh:${prefix}:`, timeoutMs: TIMEOUT_MS });
      const limiter = createFixedWindowLimiter({ name: "ip", limit, windowMs, store, failure: "closed", ...(cache ? {} : { maxDeniedKeys: 0 }) });
      return (key) => {
        const d = limiter.take(key);
        return d instanceof Promise ? d.then((x) => x.allowed) : d.allowed;
      };
    },
  });
  return [subject(true), subject(false)];
}
