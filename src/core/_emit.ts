import type { EventSink, HygieneEvent } from "./events.ts";
import { _settleQuietly } from "./_user_code.ts";

/** Calls every sink, shielding the caller from a sink that throws. */
export function _emit(sinks: readonly (EventSink | undefined)[], event: HygieneEvent): void {
  for (const sink of sinks) {
    if (sink === undefined) continue;
    try {
      _settleQuietly(sink(event) as unknown);
    } catch {
      // A broken sink must never turn an answer into a crash.
    }
  }
}
