import type { Clock } from "../../src/core/clock.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import type { RateLimiter } from "../../src/core/limits/rate_limiter.ts";

/**
 * A limiter of the user's own (peeked at, then charged: not the core's one-call path) over a
 * generous fixed window, recording the time (`now`) of each charge in `asked`.
 */
export function timeSpyLimiter(clock: Clock): { limiter: RateLimiter; asked: number[] } {
  const real = createFixedWindowLimiter({ limit: 100, windowMs: 1000, clock });
  const asked: number[] = [];
  const limiter = {
    name: "spy",
    limit: real.limit,
    windowMs: real.windowMs,
    peek: (key: string, cost?: number, now?: number) => real.peek(key, cost, now),
    take: (key: string, cost?: number, now?: number) => (asked.push(now!), real.take(key, cost, now)),
  } as RateLimiter;
  return { limiter, asked };
}
