// The take of one or more shared limiters (one scoped request's shared scopes), all or
// nothing, in one store call. Not re-exported. In order, each answering at once when it can:
//   1. the denied-key cache: a key the store denied until T is denied here until T;
//   2. the local pre-checks (peeked, then all charged);
//   3. the store: "fallback" → the insurance limiters (peeked, then all charged);
//      "saturated" → the failure mode; else one call, settling within the store's timeout,
//      whose reply is used as is (denials cached), or whose failure takes the failure mode
//      (the insurance limiters, when that failure made the store fall back or was its probe).
// Deny events are the caller's (it knows the scope); fault events go to `sink`.
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import type { RateAlgorithm, RateStore, RateStoreCheck, RateStoreFailure, RateStoreReply, RateStoreResult } from "./rate_store.ts";
import type { _KeyTable } from "./_key_table.ts";
import { _emit } from "../_emit.ts";
import { _badClock, _decision } from "./_rate.ts";

/**
 * A cached denial: the key is denied, for a cost of at least `cost`, until `until`; it had
 * `remaining` left when the store denied it, and its budget is whole again at `resetAt` (what a
 * cached denial reports, as the store's did).
 */
export interface _DeniedEntry {
  until: number;
  cost: number;
  remaining: number;
  resetAt: number;
}

/** The parts of a shared limiter kept off its public interface. */
export interface _SharedParts {
  readonly check: (key: string, cost: number) => RateStoreCheck;
  readonly denied: _KeyTable<_DeniedEntry>;
  /** The limiter's take without its deny event (a caller that reports the refusal itself), its store's faults to `sink` (default: the limiter's own). */
  readonly takeUnreported: (key: string, cost?: number, now?: number, sink?: EventSink) => RateDecision | Promise<RateDecision>;
}

/** Where a shared limiter keeps its parts. */
// A registry symbol, as the context's: a shared limiter made by another copy of the package (a
// bundled sub-app's, a dependency's own) is one here too — with a private symbol it was refused
// as "needs a limiter of its own" / "must be a rate limiter" (a review).
export const _SHARED: unique symbol = Symbol.for("serve-hygiene.shared-limiter") as never;

/** What the take reads of a shared limiter (shared_limiter.ts's SharedRateLimiter fits). */
export interface _SharedView {
  readonly algorithm: RateAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly failClosedRetryAfterMs: number;
  readonly store: RateStore;
  readonly failure: "open" | "closed";
  readonly insurance: RateLimiter;
  readonly localLimiter: RateLimiter | undefined;
  readonly [_SHARED]: _SharedParts;
}

/** One shared limiter of a take, and the bucket asked of it. */
export interface _Member {
  readonly limiter: _SharedView;
  readonly key: string;
}

/** A decision, and the member it speaks for (the longest refusal; the tightest when allowed). */
export interface _Verdict {
  readonly d: RateDecision;
  readonly at: number;
}

const parts = (m: _Member): _SharedParts => m.limiter[_SHARED];

/** The member with the least remaining (the first on a tie), as the scoped limiter reports. */
function _tightest(ds: readonly RateDecision[]): _Verdict {
  let at = 0;
  for (let i = 1; i < ds.length; i++) if (ds[i]!.remaining < ds[at]!.remaining) at = i;
  return { d: ds[at]!, at };
}

/**
 * Of two refusals, the one a client must wait out: its Retry-After is when every member admits
 * again (a review: the first refusing rule's shorter wait sent an obedient client into the
 * next 429). On a tie, the coarser (listed first: the lower `at`).
 */
export function _longer(refused: _Verdict | undefined, d: RateDecision, at: number): _Verdict {
  if (refused === undefined) return { d, at };
  const wait = d.retryAfterMs, other = refused.d.retryAfterMs;
  return wait > other || (wait === other && at < refused.at) ? { d, at } : refused;
}

/** Peeks every limiter, then charges them all; a refusal (the longest) or a throw stops it. */
function _local(list: readonly (RateLimiter | undefined)[], members: readonly _Member[], cost: number, now: number): _Verdict | RateDecision[] {
  const out: RateDecision[] = [];
  let refused: _Verdict | undefined;
  for (let i = 0; i < list.length; i++) {
    const l = list[i];
    if (l === undefined) continue;
    const d = l.peek(members[i]!.key, cost, now);
    if (!d.allowed) refused = _longer(refused, d, i);
  }
  if (refused !== undefined) return refused;
  for (let i = 0; i < list.length; i++) {
    const l = list[i];
    if (l !== undefined) out[i] = l.take(members[i]!.key, cost, now);
  }
  return out;
}

/**
 * The longest Retry-After of a refusal because a store call failed: the store may answer its next
 * call, and once it falls back its probe comes every second by default. The limiter's whole
 * window, as for a broken limiter, told a client obeying it to stay away an hour (a limiter of
 * an hourly window) after a 50 ms Redis stall (the shared-limits review).
 */
const STORE_FAILED_RETRY_MS = 1000;

/**
 * A failed call, the limiters' failure modes decide: any "closed" denies (at the first), else all
 * admit. `closed`: no store call failed, the limiters did (an insurance limiter, the clock): denied,
 * with the limiter's own hint.
 */
function _failed(
  members: readonly _Member[],
  cost: number,
  failure: RateStoreFailure,
  sink: EventSink | undefined,
  closed = false,
): _Verdict {
  const at = closed ? 0 : members.findIndex((m) => m.limiter.failure === "closed");
  const error = failure.error ?? new RangeError(`The rate store had ${members[0]!.limiter.store.maxPending} calls outstanding (maxPending)`);
  _emit([sink], { type: "fault", source: "rate-store", error, failed: at < 0 ? "open" : "closed" });
  if (at >= 0) {
    const l = members[at]!.limiter;
    const ms = closed ? l.failClosedRetryAfterMs : Math.min(l.failClosedRetryAfterMs, STORE_FAILED_RETRY_MS);
    return { d: _decision(false, ms, 0, l.limit, ms, l.windowMs, "limiter-error"), at };
  }
  const l = members[0]!.limiter;
  return { d: _decision(true, 0, l.limit - cost, l.limit, l.windowMs, l.windowMs, undefined), at: 0 };
}

/** The insurance limiters answer while the store falls back. */
function _insured(members: readonly _Member[], cost: number, now: number, sink: EventSink | undefined): _Verdict {
  try {
    const ds = _local(members.map((m) => m.limiter.insurance), members, cost, now);
    return Array.isArray(ds) ? _tightest(ds) : ds;
  } catch (error) {
    // A cost above an insurance limiter's share of the limit, or a broken limiter: denied.
    return _failed(members, cost, { failure: "error", error }, sink, true);
  }
}

// A store's times are bounded by the limiter's window: no answer of a limiter's own waits
// longer (a window's reset; a bucket's refill). A store's clock that went back (Redis's TIME
// after an NTP step or a failover) or a custom store's mistake could otherwise deny a key, and
// cache that denial on every instance, for as long as the error (a review: ten minutes' 429s
// after a 3 s glitch).
const _within = (ms: number, l: _SharedView): number => (ms > 0 ? (ms < l.windowMs ? ms : l.windowMs) : 0);

function _result(m: _Member, r: RateStoreResult): RateDecision {
  const l = m.limiter;
  return _decision(r.allowed, r.allowed ? 0 : _within(r.retryAfterMs, l), r.remaining, l.limit, _within(r.resetMs, l), l.windowMs, r.allowed ? undefined : "over-limit");
}

/**
 * The longest denial the denied-key cache holds for `members` at `now`, if any (a key the store
 * denied until T is denied here until T, with no call); expired entries are dropped. It answers
 * for the cost the store denied, or a larger one where the wait is the same (a fixed window's
 * edge): a token bucket waits longer for a larger cost, and the store is asked (a review: the
 * cached wait for cost 1 sent a cost of 3 into the next refusal).
 */
export function _cachedDenial(members: readonly _Member[], cost: number, now: number): _Verdict | undefined {
  let cached: _Verdict | undefined;
  for (let i = 0; i < members.length; i++) {
    const m = members[i]!;
    const denied = parts(m).denied;
    const e = denied.get(m.key);
    if (e === undefined) continue;
    if (now < e.until) {
      if (cost === e.cost || (cost > e.cost && m.limiter.algorithm === "fixed-window")) {
        const l = m.limiter;
        const wait = e.until - now;
        cached = _longer(cached, _decision(false, wait, e.remaining, l.limit, Math.max(wait, e.resetAt - now), l.windowMs, "over-limit"), i);
      }
    } else denied.delete(m.key);
  }
  return cached;
}

/** Caches `m`'s key as denied (where it has an entry already, or the table makes room). */
function _cacheDenial(m: _Member, now: number, entry: { until: number; cost: number; remaining: number; resetAt: number }): void {
  const denied = parts(m).denied;
  if (denied.get(m.key) !== undefined || denied.makeRoom(now)) denied.set(m.key, entry);
}

/** Takes `cost` from every member's budget, all or nothing. Members share one store. */
export function _sharedTake(members: readonly _Member[], cost: number, now: number, sink: EventSink | undefined): _Verdict | Promise<_Verdict> {
  // A broken clock or local limiter is the limiter's own fault: denied whatever the failure mode.
  if (now - now !== 0) return _failed(members, cost, { failure: "error", error: _badClock(now) }, sink, true);
  // The cache's answer is its own rules' (another member's wait may be longer: README).
  const cached = _cachedDenial(members, cost, now);
  if (cached !== undefined) return cached;
  if (members.some((m) => m.limiter.localLimiter !== undefined)) {
    try {
      const pre = _local(members.map((m) => m.limiter.localLimiter), members, cost, now);
      if (!Array.isArray(pre)) return pre;
    } catch (error) {
      return _failed(members, cost, { failure: "error", error }, sink, true);
    }
  }
  const store = members[0]!.limiter.store;
  const answer = store.call(members.map((m) => parts(m).check(m.key, cost)));
  const settle = (a: RateStoreReply | RateStoreFailure): _Verdict => {
    if ("failure" in a) {
      // Once the store falls back (this failure may be the one that tipped it, or a failed
      // probe), the insurance limiters answer; before, the limiters' failure modes.
      return a.failure === "fallback" || store.state === "fallback" ? _insured(members, cost, now, sink) : _failed(members, cost, a, sink);
    }
    let refused: _Verdict | undefined;
    for (let i = 0; i < members.length; i++) {
      const r = a.results[i]!;
      const m = members[i]!;
      if (r.allowed) {
        // A token bucket that admitted this key has less left: a denial cached for it waits
        // longer now (a review: the cached wait, answered after a smaller cost was admitted,
        // sent an obedient client into the next refusal). A window's edge does not move.
        if (m.limiter.algorithm === "token-bucket") parts(m).denied.delete(m.key);
        else if (r.remaining <= 0 && a.results.every((x) => x.allowed)) {
          // A window this take emptied refuses the key, whatever the cost, until it resets: cached
          // as that denial, so that a refusal of an in-memory rule beside it (asked first, the
          // store then not asked) reports the longer wait. Forgotten, an obedient client told
          // Retry-After 1 s by a token bucket met the shared window's 429 once a window (the
          // rate-limit headers review). Only from a call that charged: a call charges every budget
          // or none, and where another refused, this answer is what it would have had (the diff
          // review saw a tenant's window cached empty from a call a client's own scope refused).
          const until = now + _within(r.resetMs, m.limiter);
          _cacheDenial(m, now, { until, cost: 1, remaining: 0, resetAt: until });
        }
        continue;
      }
      refused = _longer(refused, _result(m, r), i);
      // The store decided at or after `now`, so the key is denied until `now + retryAfterMs`
      // at least: cached that long, never longer.
      _cacheDenial(m, now, { until: now + _within(r.retryAfterMs, m.limiter), cost, remaining: r.remaining, resetAt: now + _within(r.resetMs, m.limiter) });
    }
    if (refused !== undefined) return refused;
    return _tightest(members.map((m, i) => _result(m, a.results[i]!)));
  };
  return answer instanceof Promise ? answer.then(settle) : settle(answer);
}
