// A rate-store backend the test drives by hand: every call waits until the test answers it
// (resolve with results, reject, or never), so timeouts, pending calls and the breaker are
// observed with the manual clock and no sleeping.
import type { RateStoreBackend, RateStoreCheck, RateStoreReply, RateStoreResult } from "../../src/core/limits/rate_store.ts";

export interface FakeCall {
  readonly checks: readonly RateStoreCheck[];
  resolve(results: readonly RateStoreResult[], now?: number): void;
  reject(error: unknown): void;
}

export interface FakeBackend extends RateStoreBackend {
  /** Every call made, in order. */
  readonly calls: FakeCall[];
  /** Calls not yet answered. */
  readonly open: FakeCall[];
}

export function createFakeBackend(): FakeBackend {
  const calls: FakeCall[] = [];
  const settled = new Set<FakeCall>();
  return {
    calls,
    get open() {
      return calls.filter((c) => !settled.has(c));
    },
    take(checks) {
      return new Promise<RateStoreReply>((resolve, reject) => {
        const call: FakeCall = {
          checks,
          resolve: (results, now = 0) => {
            settled.add(call);
            resolve({ now, results });
          },
          reject: (error) => {
            settled.add(call);
            reject(error);
          },
        };
        calls.push(call);
      });
    },
  };
}

export const ALLOW = (remaining = 0): RateStoreResult => ({ allowed: true, retryAfterMs: 0, remaining, resetMs: 1000 });
export const DENY = (retryAfterMs: number): RateStoreResult => ({ allowed: false, retryAfterMs, remaining: 0, resetMs: retryAfterMs });
