// serve-hygiene's shared limiter as subjects of the Redis part (bench/http/redis_checks.ts).
import type { RedisClientType } from "redis";
import type { Subject } from "./redis_checks.ts";

/** The shared fixed window over `client`, with and without the denied-key cache. */
export function sharedSubjects(_client: unknown): Subject[] {
  return [];
}
