// What the concurrency limit hands out: a permit, or a refusal, and to a request that has to
// wait, one waiter object (a closed-loop storm keeps ~250 waiting: a waiter is one class
// instance, holding its caller's context and callback, and nothing once it has left).
import type { _WaitQueue, _Waiter } from "./_wait_queue.ts";

/**
 * What a wait needs of an abort signal: whether it fired, and its "abort" event. An
 * `AbortSignal` is one; an adapter may give a cheaper one (node: the response's close event,
 * where reading the request's `signal` makes @hono/node-server build an AbortController).
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** A held permit. Release it (or dispose it) exactly when the work ends; releasing twice is a no-op. */
export interface Permit extends Disposable {
  readonly ok: true;
  /** Gives the permit back; the work's latency is not a sample (it was refused, aborted, timed out). */
  release(): void;
  /** Gives the permit back after the work completed normally: its latency feeds an adaptive limit. */
  complete(): void;
}

/** Why no permit was handed out. */
export interface Refusal {
  readonly ok: false;
  /**
   * "shed": none free and no queue; "queue-full": the queue was at `maxWaiting`;
   * "queue-timeout": the wait passed `shedWaitMs`; "aborted": the waiter's signal fired first.
   */
  readonly reason: "shed" | "queue-full" | "queue-timeout" | "aborted";
  readonly retryAfterMs: number;
}

/** A permit: released once, by `release` (no sample), `complete` (a sample) or dispose. */
export class _Permit implements Permit {
  readonly ok = true as const;
  readonly at: number;
  /** What kind of request holds it (its URL path, given by the guard): the adaptive limit's `sample` kind. */
  kind: string | undefined = undefined;
  #release: ((sampled: _Permit | undefined) => void) | undefined;

  constructor(release: (sampled: _Permit | undefined) => void, at: number) {
    this.#release = release;
    this.at = at;
  }

  release(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.(undefined);
  }

  complete(): void {
    const release = this.#release;
    this.#release = undefined;
    release?.(this);
  }

  [Symbol.dispose](): void {
    this.release();
  }

  /**
   * How it is given back from now on (its limit parks or unparks it: concurrency_limit.ts),
   * only if it is now given back by `expected` (any way, when not given); returns the way before,
   * or undefined once it was given back (then nothing changes).
   */
  _rebind(release: (sampled: _Permit | undefined) => void, expected?: (sampled: _Permit | undefined) => void): ((sampled: _Permit | undefined) => void) | undefined {
    const before = this.#release;
    if (before !== undefined && (expected === undefined || before === expected)) this.#release = release;
    return before;
  }
}

/** What a waiter needs of its concurrency limit. */
export interface _Owner {
  readonly release: (sampled: _Permit | undefined) => void;
  readonly releaseOver: () => void;
  readonly refusals: Readonly<Record<"queue-timeout" | "aborted", Refusal>>;
  readonly queue: _WaitQueue;
}

/**
 * One waiting request: its outcome goes to `done`, once. Once it has left the queue it holds
 * neither its signal nor its caller's context (a tombstone may wait a while in the queue's
 * array before it reaches an end).
 */
export class _Waiting implements _Waiter {
  readonly at: number;
  live = true;
  readonly #owner: _Owner;
  #ctx: unknown;
  #done: ((ctx: unknown, p: Permit | Refusal) => void) | undefined;
  #signal: AbortSignalLike | undefined = undefined;
  #onAbort: (() => void) | undefined = undefined;

  constructor(at: number, owner: _Owner, ctx: unknown, done: (ctx: unknown, p: Permit | Refusal) => void) {
    this.at = at;
    this.#owner = owner;
    this.#ctx = ctx;
    this.#done = done;
  }

  settle(outcome: number | "queue-timeout" | "aborted", pastLimit?: boolean): void {
    const done = this.#done;
    const ctx = this.#ctx;
    this.#done = undefined;
    this.#ctx = undefined;
    const owner = this.#owner;
    done?.(ctx, typeof outcome === "number" ? new _Permit(pastLimit === true ? owner.releaseOver : owner.release, outcome) : owner.refusals[outcome]);
  }

  /** Leaves the queue, refused, when `signal` fires first. */
  listen(signal: AbortSignalLike): void {
    const onAbort = () => {
      if (!this.live) return;
      this.#owner.queue.remove(this);
      this.settle("aborted");
    };
    this.#signal = signal;
    this.#onAbort = onAbort;
    signal.addEventListener("abort", onAbort, { once: true });
  }

  detach(): void {
    if (this.#onAbort !== undefined) this.#signal!.removeEventListener("abort", this.#onAbort);
    this.#signal = undefined;
    this.#onAbort = undefined;
  }
}
