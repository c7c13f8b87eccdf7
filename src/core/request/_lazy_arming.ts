// Deadlines armed lazily. A handler that turned asynchronous needs its deadline only if it is
// still running when the deadline could first fire, and most end within milliseconds: arming
// each one at once (an entry in the deadline wheel, then its cancel) was ~3 % of the server's
// CPU a request behind the hygiene() middleware on Deno (whose handlers are all asynchronous:
// Hono's next() is a promise). Instead the guard's list of running handlers is read once a tick:
// those that turned asynchronous since the last tick and still run are armed then, from their
// arrival, as before; one already past its deadline fires there. A deadline fires at most one
// tick late, as the wheel's do. Nothing is allocated a request.
import type { Clock, TimerHandle } from "../clock.ts";
import type { _LinkedList } from "../_linked_list.ts";
import type { _Admission } from "./admission.ts";

/** How often running handlers are looked at, in milliseconds: the deadline wheel's resolution. */
export const ARMING_TICK_MS = 10;

/** Arms the deadlines of the guard's running handlers at the first tick that finds them running. */
export interface _LazyArming {
  /**
   * `a` turned asynchronous and was just added at the end of the running list: armed at the next
   * tick if it is still running (and has a deadline: `a.timed`).
   */
  track(a: _Admission): void;
  /** Stops the tick (the guard was disposed). */
  dispose(): void;
}

/**
 * `live`: the guard's running handlers, oldest first (added at its end as they turn
 * asynchronous, removed when they settle). `fire`: a deadline already passed at its tick.
 */
export function _lazyArming(live: _LinkedList<_Admission>, clock: Clock, fire: (a: _Admission) => void): _LazyArming {
  let tick = 0; // the current tick's number: `a.armTick` says which tick `a` joined in
  let ticker: TimerHandle | undefined;
  const due: _Admission[] = [];

  const onTick = () => {
    const now = clock.now();
    // Those that joined since the last tick are the list's end, in order: what settled left it.
    for (let a = live.last; a !== undefined && a.armTick === tick; a = a.prevLink as _Admission | undefined) due.push(a);
    tick++;
    // Armed oldest first, outside the walk: a fired deadline runs user cleanups.
    for (let i = due.length - 1; i >= 0; i--) {
      const a = due[i]!;
      if (!a.timed || a.settled || a.abandonedBy !== undefined) continue;
      if (a.startedAt + a.timeoutMs <= now) fire(a);
      else a.armOnce(now);
    }
    due.length = 0;
    if (live.size === 0) {
      ticker?.cancel();
      ticker = undefined;
    }
  };

  return {
    track(a) {
      a.armTick = tick;
      if (a.timed) ticker ??= clock.setInterval(onTick, ARMING_TICK_MS, { unref: true });
    },
    dispose() {
      ticker?.cancel();
      ticker = undefined;
    },
  };
}
