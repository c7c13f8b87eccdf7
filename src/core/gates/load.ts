// Gate 3: the event-loop load monitor. Its probe starts with the first request, so start-up
// work between createGuard() and serving (module loading, warming caches) is not read as a
// stalled loop; a probe stopped for lack of requests (idleAfterMs) is restarted by the next
// request's admit(). A request the monitor would refuse (this turn's batch is full, or the
// admitted share says not now) waits for a later turn instead, when a wait is allowed, and so
// does every request that arrives while others wait (they would be started first: newest
// first); one that has waited the wait bound, or finds the queue full, is refused with the
// monitor's reason. Where the clock cannot resume work in a later turn (no `setImmediate`:
// Deno), a request the monitor refuses is held a while (REFUSAL_HOLD_MS, at most the wait
// bound) before its refusal is sent: under a closed-loop storm a 503 sent at once comes
// straight back, and each one costs CPU the admitted work needs (Deno's synchronous storm:
// 5,400 refusals a second, a tenth of the core, against ~1,200 held 100 ms). While no permit
// is in use (synchronous work) a refusal is held the whole wait bound, and once some are held
// the batch bound is shorter (HELD_BATCH_MS). One refused for a stall or the share (`busy`, not
// the batch bound) is started instead if a probe reads the loop normal again within its hold
// (see _heldRefusals): one long handler must not cost the requests read right after it a 503.
// And there, while the process has CPU to spare, a held `busy` one is started at the next probe
// whatever the share (see _loadGate).
import type { Clock } from "../clock.ts";
import type { LoadMonitor } from "../overload/load_monitor.ts";
import type { _Spare } from "../_guard_state.ts";
import { _sliceOver, _turnEntry, _TurnQueue, type _TurnWaiter } from "../overload/_turn_queue.ts";
import { _WaitQueue } from "../overload/_wait_queue.ts";
import type { _Admission } from "../request/admission.ts";
import type { AbortSignalLike } from "../overload/permit.ts";
import { _FORCED, type Gate, type GateRefusal, type GateVerdict, PASS } from "./gate.ts";

/** The load gate, and how to stop it from starting the probe (the guard was disposed). */
export interface _LoadGate extends Gate {
  /** Requests waiting for a later turn now. */
  readonly waiting: number;
  /** Settles the next time no request waits for a later turn. */
  emptied(): Promise<void>;
  /** Refuses every waiting request now and every later one that would wait (a forced drain). */
  refuseWaiting(): void;
  dispose(): void;
}

/** How long a request may wait for a later turn, and how many may (0 for either: refuse at once). */
export interface _LoadWait {
  readonly waitMs: number;
  readonly maxWaiting: number;
}

// A waiting request whose client left: nobody reads the answer, the deny event says why.
const ABORTED: GateRefusal = Object.freeze({ reason: "aborted", status: 503 });

// How long a turn may keep starting waiters: the batch bound while the monitor reads normal
// (not busy, the whole share admitted), nothing beyond a slice otherwise.
const room = (load: LoadMonitor) => () => (load.busy || load.admitShare < 1 ? 0 : load.maxBatchMs);

/**
 * How long the load gate holds a refusal where no later turn can start the request (a clock
 * without `setImmediate`: Deno), at most `shedWaitMs`. Measured on Deno (closed loop of 256,
 * interleaved, 5 December 2026): a synchronous storm's goodput rose from 0.90 of the
 * unprotected server's to 0.96 at 100 ms and 0.98 at 500 ms; but a refusal held is a client
 * idle for the hold, and an I/O-bound storm, where the monitor refuses a few requests a second
 * that the server could have served, lost ~10 % of its goodput in 2 of 3 pairs at 500 ms and
 * nothing measurable at 100 ms. So this hold is for refusals made while permits are in use;
 * while none is (synchronous work), a refusal is held the wait bound (see HELD_BATCH_MS).
 */
export const REFUSAL_HOLD_MS = 100;

/**
 * Where refusals are held (no later turn: Deno), while no permit is in use — synchronous work,
 * which gives its permit back within its turn: a refusal is held the whole wait bound
 * (`shedWaitMs`), not REFUSAL_HOLD_MS, and once some are held a turn admits for this long, in
 * milliseconds, instead of the monitor's batch bound. With no later turn a batch is served in
 * arrival order, oldest first, so the bound is what an admitted request may wait behind the
 * others of its turn. Measured on Deno (closed loop of 256, 2 ms synchronous handlers, 5
 * December 2026, probes): admitted p99 71–83 ms at the monitor's 25 ms bound, 51–52 at 15 and
 * 34–46 at 10, goodput 2–3 % lower (0.96 → 0.91 in the overload benchmark); holding the
 * refusals 500 ms as well, 2xx/s 452–455 → 476–477 of the unprotected server's ~480 with p99
 * 35 ms. Not at normal load, where no refusal is held (at half of capacity a 10 ms bound
 * throughout refused a few bunched requests a second). Not while permits are in use (async or
 * I/O-bound work, which the concurrency limit bounds): an I/O-bound storm lost 5–8 % of its
 * goodput to a 10 ms bound and ~10 % to 500 ms holds; and with "no request waits for a
 * permit" as the condition instead, the refusals held at the end of an I/O-bound storm kept
 * the bound short once the load fell, and it refused more, held in turn (146 refusals for
 * 1.5 s after the storm, in 1 of 3 step runs). Nor while the process is mostly idle (under half
 * of what it may use, over its last half-second): a batch runs from a probe to the next (10 ms),
 * so a probe a millisecond late lets a quiet server's arrivals pass the bound; under the
 * hot-path load (GET / "ok", 64 connections) one held refusal kept it short, each refusal held
 * 500 ms brought the next, and the server answered 2,400 requests a second at 13 % of a core,
 * 448 of them 503 (Deno, 1 of 6 runs, 7 December 2026), where it serves ~45,000 at a full core.
 * Not "CPU to spare" (under 70 %): a synchronous storm idling behind its held refusals read so
 * at ~67 % and lost the short bound mid-storm (admitted p99 after the first second 38–42 ms
 * against 20–22 in 2 of 4 runs at 64 connections: a review).
 */
export const HELD_BATCH_MS = 10;

/** What the load gate reads of the concurrency limit. */
export interface _Permits {
  /** Requests waiting for a permit. */
  readonly waiting: number;
  /** Permits in use. */
  readonly inFlight: number;
}

/**
 * The load gate over a load monitor, reading the concurrency limit's `permits`. While requests
 * wait for a permit, a request the admitted share (or a stall) would refuse passes on to wait
 * there: joining that queue adds no work to the loop, and the concurrency limit, not the share,
 * decides when it runs (the work the monitor sees is the work that limit lets through). The
 * batch bound still applies: a synchronous handler runs in the turn it is admitted, whatever
 * the limit. While no permit is in use, see HELD_BATCH_MS. Where refusals are held (no later
 * turn: Deno), held `busy` ones are started at the next probe, whatever the share, in one slice
 * (the turn queue's room while the monitor is not normal), while `spare` says the process has
 * CPU to spare (the guard's reading of the Host's CPU time, _guard_state.ts): the delay is then
 * a pause in the work — a garbage collection, one long handler — not work queueing for the CPU,
 * and the share's recovery would hold them for nothing. So they wait for the next turn, as on
 * Node and Bun (admitted at once instead, a burst read during a stall ran in one turn, and the
 * paced load after a storm met the batch bound's 503s).
 */
export function _loadGate(load: LoadMonitor, clock: Clock, wait?: _LoadWait, permits?: _Permits, spare?: _Spare, reserve?: (a: _Admission) => GateRefusal | undefined): _LoadGate {
  let idle = true;
  // Built once: a refusal under a storm allocates nothing here.
  const busy: GateRefusal = Object.freeze({ reason: "busy", status: 503, retryAfterMs: load.retryAfterMs });
  const batch: GateRefusal = Object.freeze({ reason: "batch", status: 503, retryAfterMs: load.retryAfterMs });
  const waits = wait !== undefined && wait.waitMs > 0 && wait.maxWaiting > 0;
  const roomNow = room(load);
  const queue = waits && clock.setImmediate !== undefined ? new _TurnQueue(clock, wait.waitMs, wait.maxWaiting, () => load.pace(), roomNow) : undefined;
  // Set by a forced drain: what still waits is refused as the drain's, not as the load's.
  const state = { forced: false };
  // The last probe's reading of the Host's CPU time: the process mostly idle (under half of what
  // it may use; see HELD_BATCH_MS).
  let idleNow = false;
  const held = waits && queue === undefined ? _heldRefusals(clock, Math.min(wait.waitMs, REFUSAL_HOLD_MS), wait.waitMs, wait.maxWaiting, state) : undefined;
  const off =
    queue !== undefined
      ? load.onTurn(() => queue.wake())
      : held !== undefined
        ? load.onTurn(() => {
            // Read at every probe, held or not, so its spans stay whole (read only now and then,
            // a gap over a second between two readings reads as unknown: no CPU to spare), and
            // forgotten when the probe stops, so the first reading after that idle spell is
            // unknown too (read on through the quiet second, a storm after a spell of 1.2-1.5 s
            // read it as CPU to spare for ~500 ms: a review).
            const cpuToSpare = load.running ? spare?.() === true : (spare?.forget?.(), false);
            idleNow = cpuToSpare && spare?.idle?.() === true;
            // The turn queue's room: while the monitor reads normal, as many as fit the batch
            // bound; with CPU to spare only, one slice (a review: 20 held 1 ms handlers all
            // started in one busy probe's turn).
            if (held.length > 0) {
              const roomMs = roomNow();
              if (roomMs > 0 || cpuToSpare) held.start(() => load.pace(), roomMs);
            }
          })
        : undefined;
  // A request about to wait takes its key's slot of the per-key cap first (gate 6's `reserve`):
  // a client's waiting requests count against its cap.
  const later = (a: _Admission, refusal: GateRefusal) => {
    const early = reserve?.(a);
    if (early !== undefined) return early;
    const w = new _Later(a, refusal, state);
    return queue!.push(w) ? w : refusal;
  };
  return {
    layer: "load",
    processWide: true,
    fromHead: true,
    admit(a: _Admission) {
      if (idle) {
        idle = false;
        load.start();
        return PASS;
      }
      if (queue !== undefined && queue.length > 0) return later(a, batch);
      // Where refusals are held: while no permit is in use (synchronous work) and the process is
      // not mostly idle, the turn's batch is shorter once some are held, and a refusal is held the
      // whole wait bound (HELD_BATCH_MS).
      const short = held !== undefined && held.length > 0 && permits?.inFlight === 0 && !idleNow;
      const why = load.refusal(a.startedAt, short ? HELD_BATCH_MS : Infinity);
      if (why === undefined || (why === "busy" && permits !== undefined && permits.waiting > 0)) return PASS;
      const refusal = why === "batch" ? batch : busy;
      if (queue !== undefined) return later(a, refusal);
      if (held === undefined) return refusal;
      // Held, a `busy` one may start (see _heldRefusals): it takes its key's slot as a waiter does.
      // One of the batch bound is a refusal sent late, never started: it holds none (taken, a
      // client's held refusals kept its own later requests out: on Deno its goodput fell 9-fold).
      return (refusal === busy ? reserve?.(a) : undefined) ?? held.hold(a, refusal, permits?.inFlight === 0);
    },
    get waiting() {
      return queue !== undefined ? queue.length : held !== undefined ? held.length : 0;
    },
    emptied: () => (queue !== undefined ? queue.emptied() : held !== undefined ? held.emptied() : Promise.resolve()),
    refuseWaiting() {
      state.forced = true;
      queue?.close(false);
      held?.sendAll();
    },
    dispose() {
      idle = false;
      off?.();
      queue?.close(true);
      held?.sendAll();
    },
  };
}

/** Refusals held before they are sent (see the header), and what the gate needs of them. */
interface _HeldRefusals {
  readonly length: number;
  /**
   * The request's refusal, sent once the short hold (or with `long`, the long one) has passed
   * since its arrival; at once when `maxWaiting` are held. A `busy` one may be started first
   * (`start`).
   */
  hold(a: _Admission, refusal: GateRefusal, long: boolean): GateRefusal | PromiseLike<GateVerdict>;
  /**
   * Starts held `busy` requests, newest first (the probe read the loop normal — not busy, the
   * whole share — or the process has CPU to spare): at least one, then on while `pace()` allows
   * and the slice rule of the turn queue says the rest fit in `roomMs` (_turn_queue.ts,
   * `_sliceOver`).
   */
  start(pace: () => boolean, roomMs: number): void;
  /** Sends every held refusal now, and every later one at once (a forced drain, a disposed guard). */
  sendAll(): void;
  /** Settles the next time none is held (at once if none is). */
  emptied(): Promise<void>;
}

// Four wait queues — a short hold and a long one, for refusals of the batch bound and for
// `busy` ones (a stall or the share) — each with one timer that sends each refusal at its
// bound, oldest first. Only `start` takes a waiter early, newest first, and only a `busy` one
// while no refusal of the batch bound is held: those say a turn's arrivals were too many (a
// storm), while a stall may be one long handler that is over by the next probe. At light load, with handlers
// that block the loop 200 ms at a time, 4 of 16 requests were refused (held 500 ms, then
// 503) where Node and Bun start them in a later turn. `maxWaiting` bounds all four.
function _heldRefusals(clock: Clock, shortMs: number, longMs: number, maxWaiting: number, state: { readonly forced: boolean }): _HeldRefusals {
  const batch = [new _WaitQueue(clock, shortMs, 0), new _WaitQueue(clock, longMs, 0)] as const;
  const busy = [new _WaitQueue(clock, shortMs, 0), new _WaitQueue(clock, longMs, 0)] as const;
  const all = [...batch, ...busy];
  let closed = false;
  const length = () => batch[0].length + batch[1].length + busy[0].length + busy[1].length;
  return {
    get length() {
      return length();
    },
    hold(a, refusal, isLong) {
      if (closed || length() >= maxWaiting) return refusal;
      const w = new _Later(a, refusal, state);
      const q = (refusal.reason === "busy" ? busy : batch)[isLong ? 1 : 0];
      q.push(_turnEntry(w, q));
      return w;
    },
    start(pace, roomMs) {
      // While refusals of the batch bound are held, arrivals are a storm's: starting held
      // requests then added work the paced load after an overload met as 503s (the step: 1–3
      // refusals in its half-capacity phase, none before, and the last one 0.5–1.3 s after it).
      if (batch[0].length + batch[1].length > 0) return;
      const begun = clock.now();
      for (let started = 0; ; started++) {
        // The newest of the two busy queues' newest waiters (each serves newest first).
        const q = busy[0].length === 0 ? busy[1] : busy[1].length === 0 ? busy[0] : busy[0].newestAt! >= busy[1].newestAt! ? busy[0] : busy[1];
        const left = q.length;
        if (left === 0) break;
        const spent = clock.now() - begun;
        if (started > 0 && _sliceOver(spent, started, left, roomMs)) break;
        if (!pace()) break;
        const now = clock.now();
        q.take(now, Infinity)!.settle(now);
      }
    },
    sendAll() {
      closed = true;
      const now = clock.now();
      for (const q of all) for (let w = q.take(now, Infinity, true); w !== undefined; w = q.take(now, Infinity, true)) w.settle("queue-timeout");
    },
    emptied: () => Promise.all(all.map((q) => q.emptied())).then(() => {}),
  };
}

/**
 * A request's verdict from a later turn. A promise-like, not a promise: the guard's
 * continuation (the next gates, then the handler) runs inside `go`, synchronously, so the
 * slice that starts it measures the handler's time; a promise would run it some microtasks
 * later.
 */
class _Later implements _TurnWaiter, PromiseLike<GateVerdict> {
  readonly at: number;
  readonly #a: _Admission;
  readonly #refusal: GateRefusal;
  readonly #state: { readonly forced: boolean };
  #next: ((verdict: GateVerdict) => void) | undefined = undefined;

  constructor(a: _Admission, refusal: GateRefusal, state: { readonly forced: boolean }) {
    this.at = a.startedAt;
    this.#a = a;
    this.#refusal = refusal;
    this.#state = state;
  }

  then<A = GateVerdict, B = never>(onVerdict?: ((v: GateVerdict) => A | PromiseLike<A>) | null, onError?: ((e: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return new Promise<A | B>((resolve, reject) => {
      this.#next = (verdict) => {
        if (typeof onVerdict !== "function") return resolve(verdict as A);
        try {
          resolve(onVerdict(verdict));
        } catch (error) {
          if (typeof onError === "function") resolve(onError(error));
          else reject(error);
        }
      };
    });
  }

  get left(): AbortSignalLike | undefined {
    const info = this.#a.info;
    const left = info?.clientLeft;
    if (left !== undefined) return left;
    // An adapter that tells whether the client is gone but has no event for it: asked at the
    // turn (the signal is not read: on @hono/node-server that builds an AbortController a request).
    return info?.clientGone !== undefined ? undefined : this.#a.request.signal;
  }

  go(admit: boolean | "left"): void {
    const next = this.#next;
    this.#next = undefined;
    // A client that left while its request waited: refused, its handler never runs.
    if (admit === "left") next?.(ABORTED);
    else next?.(!admit ? (this.#state.forced ? _FORCED : this.#refusal) : (this.#a.info?.clientGone ?? this.#a.request.signal.aborted) ? ABORTED : PASS);
  }
}
