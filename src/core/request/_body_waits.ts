// Requests whose handler waits on its client for body bytes: a slow upload, a far client. That
// time is the client's, not the process's: once a request has been reading its body for
// PARK_AFTER_MS and a read of it waits on the client, its permit stops counting against the
// concurrency limit until the body has arrived (parked: still held, so the drain waits for it;
// never a latency sample). Not one read's wait: a client trickling small chunks ends each read
// within tens of milliseconds (a probe's 60 KB at 8 KB/s: reads of 3–94 ms). A review
// (slow clients): 20 uploads of 60 KB at 8 KB/s on an idle process were 18 refused 503 under
// hygiene() (no CPU reading: the limit learned on fast requests grew by its √ once a wait bound),
// and under serve() 32 fast clients beside them waited out the whole wait bound again and again.
// Checked only when a request finds every permit in use (and by one timer while requests wait):
// under normal load this costs a clock read and a Set entry a read. Internal.
import type { Clock, TimerHandle } from "../clock.ts";
import type { _ConcurrencyLimit } from "../overload/concurrency_limit.ts";
import type { Permit } from "../overload/permit.ts";

/**
 * How long a request reads its body, from its first read, before a read that waits on its
 * client parks the request's permit. Longer than an event-loop turn under a storm (the load
 * monitor bounds those to tens of milliseconds), so a body already on its way is not taken for
 * a slow one.
 */
export const PARK_AFTER_MS = 50;
/**
 * The same, when a request's whole wait for a permit is up and it would be refused: then a
 * request reading its body this long gives up its place to it. Parked only after
 * PARK_AFTER_MS, a burst of slow uploads got in one a PARK_AFTER_MS per place (a fresh limit
 * of 1: 8 of 20 served, 12 refused at their wait bound).
 */
export const PARK_AT_DUE_MS = 20;

/** One request's body as its reads go: made by the body cap gate for a body it counts. */
export class _BodyRead {
  /** When the body's first read started; -1 before it. */
  since = -1;
  parked = false;
  readonly #waits: _BodyWaits;
  readonly #permit: Permit;

  constructor(waits: _BodyWaits, permit: Permit) {
    this.#waits = waits;
    this.#permit = permit;
  }

  /** A read started (it may wait on the client): limitBody's `onRead`. */
  start(): void {
    this.#waits.started(this);
  }

  /** The read ended (bytes, the end, or a failure). */
  end(): void {
    this.#waits.ended(this);
  }

  /** The whole body arrived: a parked permit counts against the limit again (the work goes on). */
  arrived(): void {
    if (!this.parked) return;
    this.parked = false;
    this.#waits.concurrency._unpark(this.#permit);
  }

  /** Parks the permit (the pending read waited long enough); whether it was. */
  park(): boolean {
    if (!this.#waits.concurrency._park(this.#permit)) return false;
    this.parked = true;
    return true;
  }
}

/**
 * How late a timer may run with the loop still keeping up. Later, the process is busy: a read
 * pending then may be waiting for the loop, not for its client, and parking it would admit
 * more work into a loop that cannot keep up. A guard where there is no CPU reading (`hygiene()`
 * without a Host); with one, its `queueing` says so first. (A first form without either read
 * admitted p99 545 ms in asynchronous POST storms on Node and Deno against 57–82 ms; the cause
 * there was another: the wait bound handed free permits held for fresher requests to the
 * waiters due, whatever was parked.)
 */
export const LATE_MS = 10;

/** The reads pending on their clients, and the parking of their permits. */
export class _BodyWaits {
  readonly concurrency: _ConcurrencyLimit;
  readonly #clock: Clock;
  // The reads pending now (a Set: a handful, but for slow bodies not yet parked).
  readonly #pending = new Set<_BodyRead>();
  #timer: TimerHandle | undefined = undefined;
  /** When the armed timer should run. */
  #timerAt = 0;
  /** How late this object's last timer ran, and when: the loop's own reading. */
  #late = Infinity;
  #lateAt = -Infinity;

  constructor(clock: Clock, concurrency: _ConcurrencyLimit) {
    this.#clock = clock;
    this.concurrency = concurrency;
    concurrency._whenFull((now, due) => this.#full(now, due));
  }

  /** A body the gate counts, read by the request holding `permit`. */
  read(permit: Permit): _BodyRead {
    return new _BodyRead(this, permit);
  }

  started(r: _BodyRead): void {
    if (r.parked) return;
    if (r.since < 0) r.since = this.#clock.now();
    this.#pending.add(r);
  }

  ended(r: _BodyRead): void {
    this.#pending.delete(r);
  }

  /**
   * Every permit is in use. At a request's arrival, a timer comes back when the first pending
   * read will have waited PARK_AFTER_MS; when a waiter's wait is up, the reads pending
   * PARK_AT_DUE_MS give up their places to it — in both, only while the process keeps up.
   */
  #full(now: number, due: boolean): boolean {
    if (this.#pending.size === 0) return false;
    if (!due) this.#arm(now);
    else if (!this.#busy(now)) return this.#park(now, PARK_AT_DUE_MS);
    return false;
  }

  /** Whether work queues here: the CPU reading says so, or no timer of this object ran on time within the last second. */
  #busy(now: number): boolean {
    return this.concurrency._queueing() === true || !(now - this.#lateAt <= 1000 && this.#late <= LATE_MS);
  }

  /** Parks the pending reads `after` old; whether there were any. */
  #park(now: number, after: number): boolean {
    let any = false;
    for (const r of this.#pending) {
      if (now - r.since < after) continue;
      if (!r.park()) continue; // the limit bounds it (maxLimit, maxWaiting): tried again later
      this.#pending.delete(r);
      any = true;
    }
    return any;
  }

  #arm(now: number): void {
    if (this.#timer !== undefined) return;
    let first = Infinity;
    for (const r of this.#pending) first = Math.min(first, r.since);
    // Not before the first pending read is old enough; once it is, a while later (the loop was busy).
    const at = first + PARK_AFTER_MS > now ? first + PARK_AFTER_MS : now + PARK_AFTER_MS;
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined;
      const now = this.#clock.now();
      this.#late = now - this.#timerAt;
      this.#lateAt = now;
      if (this.concurrency.waiting === 0 || this.#pending.size === 0) return;
      if (!this.#busy(now)) {
        // A millisecond's grace: Bun's timers may run a fraction of one early.
        this.#park(now, PARK_AFTER_MS - 1);
        this.concurrency._admit(now);
      }
      if (this.concurrency.waiting > 0 && this.#pending.size > 0) this.#arm(now);
    }, at - now, { unref: true });
  }

  /** Stops the timer (the guard's dispose). */
  dispose(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
