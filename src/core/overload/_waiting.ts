// Internal: what the concurrency limit hands out and keeps a wait — a permit, and one waiting
// request (concurrency_limit.ts owns both).
import type { AbortSignalLike, Permit, Refusal } from "./concurrency_limit.ts";
import type { _Waiter, _WaitQueue } from "./_wait_queue.ts";

/** A permit: released once, by `release` (no sample), `complete` (a sample) or dispose. */
export class _Permit implements Permit {
  readonly ok = true as const;
  readonly at: number;
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
}

/** What a waiter needs of its concurrency limit. */
export interface _Owner {
  readonly release: (sampled: _Permit | undefined) => void;
  readonly releaseOver: () => void;
  readonly refusals: Readonly<Record<"queue-timeout" | "aborted", Refusal>>;
  readonly queue: _WaitQueue;
}

/** `done` for a wait whose context is its promise's resolve. */
export const _call = (resolve: (p: Permit | Refusal) => void, p: Permit | Refusal): void => resolve(p);

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
