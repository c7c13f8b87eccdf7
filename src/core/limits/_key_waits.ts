// The bounded wait of a request over its key's in-flight cap for one of the key's own slots
// (the in-flight limiter's `shedWaitMs`). Not re-exported.
//
// Each key's waiters hang off its count box (a box with waiters is at its cap, so it is never
// dropped from the table). A released slot goes to the newest waiter, as the lane serves
// (LIFO); at most `perKey` wait per key, a new one past that pushes out the oldest; a waiter
// leaves at once when its time is up or its signal aborts, taking its timer and listener
// with it.
import type { Clock, TimerHandle } from "../clock.ts";
import type { _Count } from "./_key_counts.ts";

/** Why a wait ended without a slot. */
export type _WaitEnd = "peer-busy" | "aborted";

interface _Waiter {
  readonly box: _Count;
  timer: TimerHandle | undefined;
  detach: (() => void) | undefined;
  end(reason: _WaitEnd): void;
  grant(): void;
}

export class _KeyWaits {
  readonly #clock: Clock;
  readonly #waitMs: number;
  readonly #perKey: number;
  /** Every wait now (what `endAll` ends). */
  readonly #all = new Set<_Waiter>();

  constructor(clock: Clock, waitMs: number, perKey: number) {
    this.#clock = clock;
    this.#waitMs = waitMs;
    this.#perKey = perKey;
  }

  /** Requests waiting for a slot of their key now. */
  get waiting(): number {
    return this.#all.size;
  }

  /**
   * Waits for one of `box`'s slots: settles with `onGrant()` once one is handed over (the slot
   * is then the waiter's), or with `onEnd(reason)` when the wait ends without one. Throws,
   * queueing nothing, if the timer or the signal's listener cannot be set up.
   */
  wait<T>(box: _Count, signal: AbortSignal | undefined, onGrant: () => T | Promise<T>, onEnd: (reason: _WaitEnd) => T): Promise<T> {
    const waiters = (box.waiters ??= []) as _Waiter[];
    let resolve!: (value: T | Promise<T>) => void;
    const promise = new Promise<T>((r) => (resolve = r));
    const w: _Waiter = {
      box,
      timer: undefined,
      detach: undefined,
      end: (reason) => (this.#done(w), resolve(onEnd(reason))),
      grant: () => (this.#done(w), resolve(onGrant())),
    };
    const leave = (reason: _WaitEnd) => {
      const i = waiters.indexOf(w);
      if (i === -1) return;
      waiters.splice(i, 1);
      w.end(reason);
    };
    try {
      w.timer = this.#clock.setTimeout(() => leave("peer-busy"), this.#waitMs);
      if (signal !== undefined) {
        const onAbort = () => leave("aborted");
        signal.addEventListener("abort", onAbort, { once: true });
        w.detach = () => signal.removeEventListener("abort", onAbort);
      }
    } catch (error) {
      w.timer?.cancel();
      throw error;
    }
    this.#all.add(w);
    waiters.push(w);
    if (waiters.length > this.#perKey) waiters.shift()!.end("peer-busy");
    return promise;
  }

  /** Hands one of `box`'s slots to its newest waiter; false when nobody waits for one. */
  handOver(box: _Count): boolean {
    const next = box.waiters?.pop() as _Waiter | undefined;
    if (next === undefined) return false;
    next.grant();
    return true;
  }

  /** Ends every wait now with `reason` (the guard's forced drain), the oldest of each key first. */
  endAll(reason: _WaitEnd): void {
    for (const w of [...this.#all]) {
      const waiters = w.box.waiters as _Waiter[];
      const i = waiters.indexOf(w);
      if (i !== -1) waiters.splice(i, 1);
      w.end(reason);
    }
  }

  #done(w: _Waiter): void {
    this.#all.delete(w);
    w.timer?.cancel();
    w.detach?.();
  }
}
