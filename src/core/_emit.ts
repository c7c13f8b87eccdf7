import type { EventSink, HygieneEvent } from "./events.ts";

/** Calls every sink, shielding the caller from a sink that throws. */
export function _emit(sinks: readonly (EventSink | undefined)[], event: HygieneEvent): void {
  for (const sink of sinks) {
    if (sink === undefined) continue;
    try {
      sink(event);
    } catch {
      // A broken sink must never turn an answer into a crash.
    }
  }
}
