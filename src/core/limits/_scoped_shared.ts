// The take of a scoped limiter with scopes over a shared store (scopes.ts builds it): the
// in-memory scopes are peeked first (a refusal costs no round-trip), then every shared scope
// is asked in one store call that charges all or none (_shared_take.ts), then the in-memory
// scopes are charged. Not re-exported.
import type { Clock } from "../clock.ts";
import type { EventSink } from "../events.ts";
import type { RateDecision, RateLimiter } from "./rate_limiter.ts";
import { _checkCost } from "./_rate.ts";
import { _keyResult, _skipResult } from "../_user_code.ts";
import { _cachedDenial, _longer, _SHARED, type _Member, type _SharedView, _sharedTake, type _Verdict } from "./_shared_take.ts";

/** One scope as scopes.ts holds it. */
export interface _ScopeEntry<C> {
  readonly name: string;
  readonly limiter: RateLimiter;
  readonly key: ((ctx: C) => string) | undefined;
  readonly skip: ((ctx: C) => boolean) | undefined;
}

const _shared = (l: unknown): _SharedView | undefined =>
  typeof l === "object" && l !== null && _SHARED in l ? (l as _SharedView) : undefined;

/**
 * The scoped take over shared scopes. `refuse` reports a denial at a scope (deny event);
 * `failClosed` denies at a scope whose key function or limiter threw; `scoped` labels an
 * allowed decision with its scope.
 */
export function _sharedScopedTake<C, D>(
  list: readonly _ScopeEntry<C>[],
  clock: Clock,
  sink: EventSink | undefined,
  refuse: (d: RateDecision, scope: _ScopeEntry<C>) => D,
  failClosed: (error: unknown, scope: _ScopeEntry<C>) => D,
  scoped: (d: RateDecision, scope: string) => D,
  unmetered: D,
): (ctx: C, cost?: number, now?: number) => D | Promise<D> {
  const shared = list.map((s) => _shared(s.limiter));
  const sharedAt = list.flatMap((_, i) => (shared[i] === undefined ? [] : [i]));
  return (ctx, cost = 1, at) => {
    let now: number;
    try {
      now = at === undefined ? clock.now() : at;
    } catch (error) {
      return failClosed(error, list[0]!);
    }
    if (cost !== 1) for (const s of list) _checkCost("take from scoped limiter", cost, s.limiter.limit);
    // A skipped scope's key stays undefined: neither asked nor charged.
    const keys: (string | undefined)[] = new Array(list.length);
    // Every in-memory scope is peeked, a refused request too: its Retry-After is the longest
    // of theirs (scopes.ts), and of the shared scopes' denials cached here. The store is not
    // asked then (a refusal costs no round-trip).
    let refused: _Verdict | undefined;
    for (let i = 0; i < list.length; i++) {
      const scope = list[i]!;
      try {
        if (scope.skip !== undefined && _skipResult(scope.skip(ctx), "a scope's (a rateLimits rule's) skip function")) continue;
        keys[i] = scope.key === undefined ? scope.name : _keyResult(scope.key(ctx), "a scope's (a rateLimits rule's) key function");
      } catch (error) {
        return failClosed(error, scope);
      }
      if (shared[i] !== undefined) continue;
      let d: RateDecision;
      try {
        d = scope.limiter.peek(keys[i]!, cost, now);
      } catch (error) {
        return failClosed(error, scope);
      }
      if (!d.allowed) refused = _longer(refused, d, i);
    }
    const asked = sharedAt.filter((i) => keys[i] !== undefined);
    const members: _Member[] = asked.map((i) => ({ limiter: shared[i]!, key: keys[i]! }));
    if (refused !== undefined) {
      const cached = members.length === 0 ? undefined : _cachedDenial(members, cost, now);
      if (cached !== undefined) refused = _longer(refused, cached.d, asked[cached.at]!);
      return refuse(refused.d, list[refused.at]!);
    }
    // `v` undefined: every shared scope skipped the request (no store call).
    const settle = (v: { d: RateDecision; at: number } | undefined): D => {
      const at = v === undefined ? -1 : asked[v.at]!;
      if (v !== undefined && !v.d.allowed) return refuse(v.d, list[at]!);
      let tightest = v?.d;
      let tightestAt = at;
      for (let i = 0; i < list.length; i++) {
        if (shared[i] !== undefined || keys[i] === undefined) continue;
        let d: RateDecision;
        try {
          // Peeked again (a peek reports nothing): another request of this process may have
          // spent the budget during the call. Denied then (the shared scopes stay charged;
          // nothing is admitted over a budget), and reported once, as the scope's.
          d = list[i]!.limiter.peek(keys[i]!, cost, now);
          if (!d.allowed) return refuse(d, list[i]!);
          d = list[i]!.limiter.take(keys[i]!, cost, now);
        } catch (error) {
          return failClosed(error, list[i]!);
        }
        // Unreachable with this module's limiters (nothing moves between peek and take); a
        // foreign limiter whose take disagrees with its peek reported its own denial.
        if (!d.allowed) return scoped(d, list[i]!.name);
        if (tightest === undefined || d.remaining < tightest.remaining || (d.remaining === tightest.remaining && i < tightestAt)) {
          tightest = d;
          tightestAt = i;
        }
      }
      return tightest === undefined ? unmetered : scoped(tightest, list[tightestAt]!.name);
    };
    if (members.length === 0) return settle(undefined);
    const v = _sharedTake(members, cost, now, sink);
    return v instanceof Promise ? v.then(settle) : settle(v);
  };
}
