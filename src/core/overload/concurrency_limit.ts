import type { Clock, TimerHandle } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { _durationMs, _fail, _options, _nonNegativeInt, _positiveIntOrInfinity, _given, MAX_TIMER_MS, type _KeyList } from "../_validate.ts";
import type { AdaptiveLimit } from "./adaptive_limit.ts";
import { _WaitQueue } from "./_wait_queue.ts";
import { type _Owner, _Permit, _Waiting, type AbortSignalLike, type Permit, type Refusal } from "./permit.ts";

export type { AbortSignalLike, Permit, Refusal } from "./permit.ts";

/**
 * The guard's default bound on a request's wait for a permit, in milliseconds: long enough
 * that under a closed-loop storm few waiters time out (each refusal comes straight back and
 * costs CPU), short enough that a refused client has not waited longer than an unprotected
 * server's tail. Newest-first service keeps admitted requests fresh whatever this is.
 */
export const DEFAULT_SHED_WAIT_MS = 500;

/**
 * The default bound on the wait of a request admitted once the queue stands: a permit reaches
 * no waiter older than this while fresher requests keep coming for it. A waiter past it is held,
 * not refused (see `standingWaitMs`), so a short bound costs few refusals; bench/README
 * (part 2) has what 20 ms against 100 did to the admitted p99 of the overload storms.
 */
export const DEFAULT_STANDING_WAIT_MS = 20;

/** Options of {@linkcode createConcurrencyLimit}. */
export interface ConcurrencyLimitOptions {
  /**
   * Permits: work that may run at once. A number fixes it (`Infinity`: uncapped, counted,
   * never refused); an {@linkcode AdaptiveLimit} moves it with the latency of completed work.
   */
  limit: number | AdaptiveLimit;
  /**
   * How long a request may wait for a permit before it is refused ("queue-timeout"), in
   * milliseconds: the bound on its time in the queue (its sojourn). While an adaptive limit is
   * still in slow start (`AdaptiveLimit.rampedAt`), a waiter whose wait is up is admitted over
   * the limit instead: it waited for the limit to find its level. 0 means no queue: a request
   * that finds no permit is refused at once ("shed") — unless the limit is adaptive with an
   * `idle` reading that says the process is mostly idle: then it is admitted over the limit
   * (never past `maxLimit`).
   * @default 0
   */
  shedWaitMs?: number | undefined;
  /** The most requests that may wait at once; past it a new one is refused at once ("queue-full"). @default 1024 */
  maxWaiting?: number | undefined;
  /**
   * Waiters are served oldest first while the queue is fresh, newest first once it has not
   * been empty for this long (a standing queue: overload), so what is admitted stays fresh.
   * With an adaptive limit, a queue also stands as soon as its waiters cannot drain within this
   * or `standingWaitMs`, whichever is shorter, even at the limit's no-queue latency
   * (waiters × `baselineMs` ÷ limit).
   * @default 100
   */
  lifoAfterMs?: number | undefined;
  /**
   * Once the queue stands (see `lifoAfterMs`), a free permit does not go to a
   * waiter that has waited longer than this: the permit stays free for the next request, and
   * the waiter is held, neither admitted late nor refused there (CoDel's short target; refused
   * at it instead, each refusal came straight back under a closed loop). Held waiters are
   * refused ("queue-timeout") at `shedWaitMs` while requests keep finding every permit in use,
   * and at once when none has for `lifoAfterMs` (the overload is over). A wait counts from when
   * permits last started coming back after a gap longer than this and `lifoAfterMs` (a wait
   * behind long work, as at a cold start with a low limit, is not queueing), and not at all
   * while an adaptive limit is still in slow start (`AdaptiveLimit.rampedAt`: the wait is for
   * the limit to find its level). At most `shedWaitMs`.
   * @default min(20, shedWaitMs)
   */
  standingWaitMs?: number | undefined;
  /** The Retry-After hint of a refusal, in milliseconds. @default 1000 */
  retryAfterMs?: number | undefined;
  /** @default systemClock */
  clock?: Clock | undefined;
}

/** Global in-flight permits with a bounded admission queue (gate 7 of DESIGN.md). */
export interface ConcurrencyLimit {
  /** The current limit (it moves when adaptive). */
  readonly limit: number;
  /** Whether the limit follows latency. */
  readonly adaptive: boolean;
  readonly shedWaitMs: number;
  /** The most requests that may wait at once. */
  readonly maxWaiting: number;
  /** Permits held now. Exact: every permit is released once, when its work settles. */
  readonly inFlight: number;
  /** Requests waiting for a permit now. */
  readonly waiting: number;
  /**
   * A permit now, or a refusal now. Never waits. `now` is the request's arrival time when the
   * caller has it (the start of its latency; saves a clock read).
   */
  tryAcquire(now?: number): Permit | Refusal;
  /** A permit now, or from the queue within `shedWaitMs`, or a refusal. An aborted `signal` withdraws the waiter. */
  acquire(signal?: AbortSignalLike, now?: number): Promise<Permit | Refusal>;
  /** Settles the next time no permit is held (at once if none is). */
  idle(): Promise<void>;
}

/** The concurrency limit as the guard's concurrency gate uses it. Internal. */
export interface _ConcurrencyLimit extends ConcurrencyLimit {
  /**
   * {@linkcode ConcurrencyLimit.acquire} without its promise: a permit or a refusal now, or
   * undefined, and then `done(ctx, …)` once, from the release or the timer that ends the wait.
   */
  _acquireFor<C>(ctx: C, done: (ctx: C, p: Permit | Refusal) => void, signal?: AbortSignalLike, arrived?: number): Permit | Refusal | undefined;
  /** Ends every wait now, each refused as its wait bound would ("queue-timeout"): the caller's forced drain. */
  _refuseWaiting(): void;
  /**
   * Parks a permit held by work that waits on its client (a request body arriving slowly:
   * _body_waits.ts): still held (`inFlight`, `idle()`), no longer counted against the limit,
   * so a waiter may take its place (`_admit`); never a latency sample. Not once given back, nor
   * while `maxWaiting` are parked, nor past the adaptive limit's `maxLimit` held in all (a fixed
   * limit: never while it is full). Returns whether it parked it.
   */
  _park(permit: Permit): boolean;
  /** Counts a parked permit against the limit again (its body has arrived), over it if need be. */
  _unpark(permit: Permit): void;
  /**
   * Hands the places of permits parked just now to waiters, oldest first whatever their wait:
   * they waited for work waiting on its client, not in an overload's queue.
   */
  _admit(now: number): void;
  /** The adaptive limit's CPU reading (`queueing`), where it has one. */
  _queueing(): boolean | undefined;
  /**
   * Called with the time whenever a request finds every permit in use (`due` false), and when a
   * waiter's wait is up (`due` true: it returns whether it parked permits, whose places then go
   * to the waiters due).
   */
  _whenFull(hook: ((now: number, due: boolean) => boolean) | undefined): void;
}

/** Every option of {@linkcode ConcurrencyLimitOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const CONCURRENCY_LIMIT_KEYS: _KeyList<ConcurrencyLimitOptions> = { limit: true, shedWaitMs: true, maxWaiting: true, lifoAfterMs: true, standingWaitMs: true, retryAfterMs: true, clock: true };

/**
 * Creates a concurrency limit: N permits (fixed, or adaptive), and in front of them a queue
 * bounded in length and in delay — oldest first while it is fresh, newest first once it
 * stands, each waiter refused once its wait passes `shedWaitMs` — never an unbounded queue.
 *
 * @example Shedding the request past the limit
 * ```ts
 * import { createConcurrencyLimit } from "serve-hygiene";
 * const limit = createConcurrencyLimit({ limit: 1 });
 * const first = limit.tryAcquire();
 * const second = limit.tryAcquire();
 * console.assert(first.ok && !second.ok && second.reason === "shed");
 * if (first.ok) first.release();
 * console.assert(limit.inFlight === 0);
 * ```
 */
export function createConcurrencyLimit(options: ConcurrencyLimitOptions): ConcurrencyLimit {
  return _createConcurrencyLimit(options);
}

/** {@linkcode createConcurrencyLimit} with the wait the guard's concurrency gate uses (internal). */
export function _createConcurrencyLimit(options: ConcurrencyLimitOptions): _ConcurrencyLimit {
  const what = "create concurrency limit";
  const o = _options(what, options, CONCURRENCY_LIMIT_KEYS);
  const adaptive = _adaptive(o.limit);
  const fixed = adaptive === undefined ? _positiveIntOrInfinity(what, "limit", o.limit) : Infinity;
  const shedWaitMs = _durationMs(what, "shedWaitMs", _given(o.shedWaitMs, 0), { zero: true });
  const maxWaiting = _nonNegativeInt(what, "maxWaiting", _given(o.maxWaiting, 1024));
  const lifoAfterMs = _durationMs(what, "lifoAfterMs", _given(o.lifoAfterMs, 100), { zero: true });
  const standingWaitMs = _durationMs(what, "standingWaitMs", _given(o.standingWaitMs, Math.min(DEFAULT_STANDING_WAIT_MS, shedWaitMs)), { zero: true });
  if (standingWaitMs > shedWaitMs) _fail(what, "standingWaitMs", `at most "shedWaitMs" (${shedWaitMs})`, standingWaitMs);
  const flowGapMs = Math.max(standingWaitMs, lifoAfterMs);
  // With an adaptive limit, a queue too long to drain within this even at the no-queue latency stands at once.
  const standAfterMs = Math.min(standingWaitMs, lifoAfterMs);
  const retryAfterMs = _durationMs(what, "retryAfterMs", _given(o.retryAfterMs, 1000));
  const clock = o.clock ?? systemClock;

  const refusal = (reason: Refusal["reason"]): Refusal => Object.freeze({ ok: false, reason, retryAfterMs });
  const refusals = { shed: refusal("shed"), "queue-full": refusal("queue-full"), "queue-timeout": refusal("queue-timeout"), aborted: refusal("aborted") };
  // A waiter's wait is up. If no permit came back for a whole wait bound, the work is long, not
  // queued; the adaptive limit grows and lets waiters in, rather than refuse them and stay
  // where it started. If permits come back but the limit is still in slow start, the waiters
  // whose wait is up waited for it to find its level, not in a queue: they are admitted over
  // it (a fresh process behind 256 connections at once refused ~50 at the bound). The limit
  // itself keeps its course: raised to hold them, it overshot on Node and stayed at 250-340
  // permits after a storm instead of ~115.
  const onDue = (now: number) => {
    // The places of work waiting on its client parked now go to the waiters due, oldest first.
    if (whenFull?.(now, true) === true) admitWaiting(now, Infinity, true);
    if (adaptive === undefined) return;
    // The process is mostly idle: a request whose wait is up waited for the limit, not for the
    // process, and is admitted (refused, a burst of long polls lost most of its requests beside
    // an idle core: a review). Not merely short of a full core: an I/O-bound storm at 86 %
    // admitted its stale waiters and lost goodput.
    const spare = adaptive.idle?.() === true;
    if (!spare && now - releasedAt >= shedWaitMs) {
      releasedAt = now; // once per wait bound
      adaptive.stalled();
      follow(adaptive);
      // Admitted whatever their wait, oldest first (those are the ones whose wait is up).
      admitWaiting(now, Infinity, true);
      return;
    }
    const rampedAt = adaptive.rampedAt ?? -Infinity;
    const ramping = rampedAt > -Infinity;
    // Slow start that has not doubled for a whole wait bound is stuck, not finding a level: long
    // polls hold its permits and give no sample (a fresh process's short requests beside them
    // waited out their wait bound for as long as the polls came: 1,400 served in 11 s, not 15,000).
    if (spare && (!ramping || now - rampedAt >= shedWaitMs)) {
      // And the limit grows to hold them and every other waiter, and by its queue allowance
      // beyond (never past maxLimit): the demand is real and the core has room. Admitted over a
      // limit that kept its course, the long polls held it full, and every short request beside
      // them waited out its whole wait bound (p50 522 ms for a 20 ms route at a few percent of a
      // core: the requests admitted over the limit are never samples, so nothing grew it).
      adaptive.stalled(inFlight + queue.length);
      follow(adaptive);
      admitWaiting(now, Infinity, true);
    } else if (spare) {
      // In slow start the limit keeps its course (see above; raised to hold every waiter there,
      // an I/O-bound storm's fresh limit overshot: goodput 0.90 against 0.94, Bun's p99 108
      // against 70 ms); it grows by its queue allowance at most once a lifoAfterMs, and the
      // waiters due are admitted over it below.
      if (now - grewAt >= lifoAfterMs) {
        grewAt = now;
        adaptive.stalled();
        follow(adaptive);
        admitWaiting(now, Infinity, true);
      }
    } else if (!ramping) return;
    // Still due (slow start, or a limit of one's own that did not grow to hold them): admitted
    // over the limit, outside its own regime: their latency is not a sample, and the permits in use that
    // samples report leave them out. Counted in, Node's I/O-bound limit ended a 3 s storm at ~250
    // in 1 of 3 step runs instead of ~100 (read as the baseline's upward rebase: from a window of
    // ~250 permits in use, halving did not lower the latency enough).
    // With CPU to spare, never past maxLimit (a user's bound for a pool behind the handler),
    // parked permits counted: the waiters due past it are refused at their bound (a review:
    // 2,000 in flight at 50).
    const most = spare ? adaptive.maxLimit : Infinity;
    for (let w = inFlight + parked < most ? queue.takeDue(now) : undefined; w !== undefined; w = inFlight + parked < most ? queue.takeDue(now) : undefined) {
      inFlight++;
      over++;
      w.settle(now, true);
    }
  };
  const queue = new _WaitQueue(clock, shedWaitMs, lifoAfterMs, onDue, standingWaitMs);
  let limit = adaptive === undefined ? fixed : adaptive.limit;
  let idleWaiters: (() => void)[] = [];
  let inFlight = 0;
  /** When a permit last came back (for the adaptive limit's stall rule and the standing bound; with a fixed limit, only while requests wait). */
  let releasedAt = clock.now();
  /** When the limit last grew for waiters due beside spare CPU during slow start. */
  let grewAt = -Infinity;
  /** When permits last started coming back after a gap longer than standingWaitMs. */
  let flowingSince = -Infinity;
  /** Permits held over the limit (waiters admitted at their wait bound during slow start). */
  let over = 0;
  /** When a request last found every permit in use (the standing bound holds waiters only while requests keep doing so). */
  let pressedAt = -Infinity;
  /** Permits parked: held by work waiting on its client, not counted in `inFlight` (see `_park`). */
  let parked = 0;
  let whenFull: ((now: number, due: boolean) => boolean) | undefined;
  /** True while a permit is parked: its place is handed on by the caller (`_admit`, or `onDue`'s own order). */
  let parking = false;
  let calm: TimerHandle | undefined;

  // Whether a permit is free: one within the limit, and with the parked ones never past
  // mostHeld (the limit grown while permits were parked filled up to it: a review, 3 held at a
  // maxLimit of 2).
  const free = () => inFlight < limit && inFlight + parked < mostHeld;
  // Hands free permits to waiters while there are both (the limit may have grown). `since` and
  // `oldest`: see _WaitQueue.take.
  const admitWaiting = (now: number, since: number, oldest = false) => {
    while (free()) {
      const w = queue.take(now, since, oldest);
      if (w === undefined) break;
      inFlight++;
      young.n++;
      w.settle(now);
    }
  };

  const release = (sampled: _Permit | undefined) => {
    // The clock is read only when the adaptive limit or a waiter needs it.
    if (adaptive === undefined && queue.length === 0) {
      inFlight--;
    } else {
      const now = clock.now();
      // No permit came back for longer than the standing bound (and lifoAfterMs: a loop turn
      // under load can outlast a short bound): what waited so far waited for long work (a cold
      // start at a low limit, a stall), not in a queue.
      if (now - releasedAt > flowGapMs) flowingSince = now;
      releasedAt = now;
      if (sampled !== undefined && adaptive !== undefined) {
        // Not counting the one that completes (within the limit, it left its cohort before this).
        adaptive.sample(now - sampled.at, inFlight - over, now, inFlight, inFlight - over - 1 - young.n, sampled.kind);
        follow(adaptive);
        if (adaptive.windows !== windows) {
          windows = adaptive.windows;
          young = _cohort(release);
        }
      } else if (lending) {
        // Given back unsampled (a poll whose client gave up): still counted as held just now.
        tellHeld(now);
      }
      inFlight--;
      if (queue.length > 0 && !parking) {
        const since = waitSince();
        admitWaiting(now, since);
        if (queue.length > 0 && free()) settleHeld(now, since);
      }
    }
    if (inFlight + parked === 0) wakeIdle();
  };
  const wakeIdle = () => {
    if (idleWaiters.length === 0) return;
    const resolved = idleWaiters;
    idleWaiters = [];
    for (const resolve of resolved) resolve();
  };

  // A parked permit given back: it was no longer counted against the limit.
  const releaseParked = () => {
    parked--;
    if (inFlight + parked === 0) wakeIdle();
  };
  // Parked or not, every permit held stays within the adaptive limit's maxLimit (a user's bound
  // for a pool behind the handler: a parked request's work after its body counts again, over
  // the limit), and a fixed limit is such a bound itself: there a slow body keeps its permit (a
  // review: a fixed limit of 4 ran 24 handlers past their bodies at once). At most `maxWaiting`
  // parked: bodies waiting on their clients are waiters of a kind.
  const mostHeld = adaptive === undefined ? fixed : adaptive.maxLimit;
  const park = (p: Permit): boolean => {
    if (!(p instanceof _Permit) || parked >= maxWaiting || inFlight + parked >= mostHeld) return false;
    const give = p._rebind(releaseParked);
    if (give === undefined || give === releaseParked) return false;
    parked++;
    // Given back unsampled, as far as the limit goes; its place is handed on by the caller.
    parking = true;
    try {
      give(undefined);
    } finally {
      parking = false;
    }
    return true;
  };
  const unpark = (p: Permit) => {
    if (!(p instanceof _Permit) || p._rebind(releaseOver, releaseParked) !== releaseParked) return;
    parked--;
    // Over the limit: its latency is its client's as much as its own, never a sample.
    inFlight++;
    over++;
  };

  /**
   * The permits taken within the limit since the adaptive limit's current window began (each
   * window a cohort of its own: a permit gives back to the one it was taken in): the rest of
   * those within the limit are long, reported to its samples.
   */
  let young = _cohort(release);
  let windows = adaptive?.windows;
  /** Whether the adaptive limit has lent something (then `quiet` is asked as permits are taken). */
  let lending = false;
  const follow = (a: AdaptiveLimit) => {
    limit = a.limit;
    lending = (a.lent ?? 0) > 0;
  };
  // While something is lent: the permits held now, read without a sample (AdaptiveLimit.quiet).
  const tellHeld = (now: number) => {
    adaptive!.quiet?.(now, inFlight);
    follow(adaptive!);
  };

  // When a waiter's wait counts from (see _WaitQueue.take). While the adaptive limit is still
  // in slow start, not at all: requests wait for the limit to find its level, not in a standing
  // queue (a slow-start window outlasts the standing bound).
  const waitSince = () => ((adaptive?.rampedAt ?? -Infinity) > -Infinity ? Infinity : flowingSince);
  // Waiters held past the standing bound beside free permits. While requests keep finding the
  // limit full, they wait on: fresh requests take the permits. Once none has for lifoAfterMs,
  // the overload is over and they are refused at once, rather than wait out shedWaitMs beside
  // free permits. Admitted then instead, they are admitted late: a form that did so read a
  // whole-run p99 of 257–258 ms in Node's I/O-bound storm (2 probes; 98–125 ms with this one,
  // 3 probes), read as those admissions, not traced. One timer at a time, only while some are held.
  const settleHeld = (now: number, since: number) => {
    if (now - pressedAt > lifoAfterMs) {
      // Unless nothing queues in the process (CPU to spare): then they take the free permits (a
      // one-off burst of short work lost 30–90 % of its requests beside an idle core: a review).
      if (adaptive?.queueing !== undefined && !adaptive.queueing()) return admitWaiting(now, Infinity);
      return queue.dropStale(now, since);
    }
    calm ??= clock.setTimeout(() => {
      calm = undefined;
      if (queue.length > 0 && free()) settleHeld(clock.now(), waitSince());
    }, Math.min(pressedAt + lifoAfterMs + 1 - now, MAX_TIMER_MS));
  };

  // A permit held over the limit: never a sample.
  const releaseOver = () => {
    over--;
    release(undefined);
  };

  const tryAcquire = (now?: number): Permit | Refusal => {
    if (lending) {
      // Something is lent: given back if no sample came for a while (see AdaptiveLimit.quiet).
      now ??= clock.now();
      tellHeld(now);
    }
    if (!free()) {
      pressedAt = now ??= clock.now();
      // Work waiting on its client may give up its place soon (_body_waits.ts comes back for it).
      whenFull?.(now, false);
      // With no wait (shedWaitMs 0), beside a mostly idle process an adaptive limit's full
      // permits are no reason to refuse (a limit still finding its level from 1, long polls
      // holding it): the request is admitted over it, never past maxLimit and never a sample,
      // as the wait queue admits a waiter whose bound comes then. Refused, a fresh process's
      // first 500 ms of 16 clients of a 20 ms route at a few percent of a core were 280–790 503s
      // (a review; none with the wait).
      if (shedWaitMs === 0 && adaptive?.idle !== undefined && inFlight + parked < mostHeld && adaptive.idle()) {
        inFlight++;
        over++;
        return new _Permit(releaseOver, now);
      }
      return refusals.shed;
    }
    inFlight++;
    if (adaptive === undefined) return new _Permit(release, 0);
    young.n++;
    return new _Permit(young.release, now ?? clock.now());
  };

  // A permit or a refusal now, or undefined and `done(ctx, …)` once the wait ends: one waiter
  // object a wait, no promise or closure of its own (a closed-loop storm keeps ~250 waiting).
  const acquireFor = <C>(ctx: C, done: (ctx: C, p: Permit | Refusal) => void, signal?: AbortSignalLike, arrived?: number): Permit | Refusal | undefined => {
    const got = tryAcquire(arrived);
    if (got.ok || shedWaitMs === 0) return got;
    if (signal?.aborted) return refusals.aborted;
    if (queue.length >= maxWaiting) return refusals["queue-full"];
    const w = new _Waiting(clock.now(), owner, ctx, done as (ctx: unknown, p: Permit | Refusal) => void);
    if (signal !== undefined) w.listen(signal);
    queue.push(w);
    // A wait starts the CPU reading's span (read at most once a span), so the one taken at the
    // wait bound covers the wait, not an idle spell or a run of fast work before it: windows
    // within tolerance read no CPU, and a burst of long polls after fast traffic found the last
    // reading seconds old, unknown, and was refused whole (295 of 300 on all three runtimes).
    adaptive?.idle?.();
    // More waiters than the permits can serve within the standing bound (or lifoAfterMs,
    // if shorter), even at the no-queue latency: the queue stands now. Otherwise a storm's
    // first burst (256 at once at a limit of 3) is served oldest first until it stands, and
    // what it admits meanwhile has waited longer than a standing queue would let it.
    const base = adaptive?.baselineMs;
    if (base !== undefined && (queue.length * base) / limit > standAfterMs) queue.stand(w.at);
    return undefined;
  };
  const owner: _Owner = {
    // A waiter's permit is taken within the limit now (the ones admitted over it release through releaseOver).
    get release() {
      return young.release;
    },
    releaseOver,
    refusals,
    queue,
  };

  return {
    get limit() {
      return limit;
    },
    adaptive: adaptive !== undefined,
    shedWaitMs,
    maxWaiting,
    get inFlight() {
      return inFlight + parked;
    },
    get waiting() {
      return queue.length;
    },
    tryAcquire,
    acquire(signal, arrived) {
      return new Promise((resolve) => {
        const now = acquireFor(resolve, _call, signal, arrived);
        if (now !== undefined) resolve(now);
      });
    },
    _acquireFor: acquireFor,
    _refuseWaiting: () => queue.settleAll(clock.now(), "queue-timeout"),
    _park: park,
    _unpark: unpark,
    _admit: (now) => admitWaiting(now, Infinity, true),
    _queueing: () => adaptive?.queueing?.(),
    _whenFull: (hook) => void (whenFull = hook),
    idle() {
      return inFlight + parked === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}

/** The permits taken within the limit in one of the adaptive limit's windows, still held. */
interface _Cohort {
  n: number;
  readonly release: (sampled: _Permit | undefined) => void;
}

const _cohort = (release: (sampled: _Permit | undefined) => void): _Cohort => {
  const c: _Cohort = {
    n: 0,
    release: (sampled) => {
      c.n--;
      release(sampled);
    },
  };
  return c;
};

const _call = (resolve: (p: Permit | Refusal) => void, p: Permit | Refusal) => resolve(p);

const _adaptive = (limit: unknown): AdaptiveLimit | undefined =>
  typeof limit === "object" && limit !== null && typeof (limit as AdaptiveLimit).sample === "function" ? (limit as AdaptiveLimit) : undefined;
