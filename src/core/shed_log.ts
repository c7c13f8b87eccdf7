import type { Clock } from "./clock.ts";
import { systemClock } from "./clock.ts";
import type { DenyEvent, HygieneEvent } from "./events.ts";
import type { Logger, LogRecord } from "./host/host.ts";
import { _durationMs, _given, type _KeyList, _options, _show } from "./_validate.ts";
import { _settleQuietly } from "./_user_code.ts";

/** Options of {@linkcode createShedLogger}. */
export interface ShedLoggerOptions {
  /** Where the lines go. */
  log: Logger;
  /** The interval within which only the first refusal of each kind is logged line by line. @default 10000 */
  intervalMs?: number | undefined;
  /** Read once per refusal; no timer is ever scheduled. @default systemClock */
  clock?: Clock | undefined;
}

/** An event sink that logs refusals without turning a shed storm into a log storm. */
export interface ShedLogger {
  /** Give it to `createGuard({ onEvent })` (or call it from your own sink). Never throws. */
  (event: HygieneEvent): void;
  /** Writes the summary of every refusal counted but not yet logged (at shutdown, say). */
  flush(): void;
}

/** One kind of refusal: the same layer, reason, limiter class and scope. */
interface _Kind {
  readonly layer: DenyEvent["layer"];
  readonly reason: string;
  readonly limiterClass: string | undefined;
  readonly scope: string | undefined;
  /** Refusals of this kind in the interval that were counted instead of logged. */
  unlogged: number;
}

/** Every option of {@linkcode ShedLoggerOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const SHED_LOGGER_KEYS: _KeyList<ShedLoggerOptions> = { log: true, intervalMs: true, clock: true };

/**
 * Creates a sink that logs refusals, itself rate-limited. The first refusal of each kind
 * (layer, reason, limiter class, scope) in an interval is logged at once:
 * `{ level: "warn", msg: "request refused", layer, reason, status, … }`. Later ones in the
 * same interval are only counted; the first refusal after the interval ends writes one
 * `{ level: "warn", msg: "requests refused", layer, reason, count, intervalMs }` line per kind
 * (`count`: refusals not logged individually) before it is logged itself. `flush()` writes
 * the pending summaries at once. An interval starts at the first refusal after the previous
 * one ended, so a quiet server keeps no state and runs no timer.
 *
 * Lines per interval are bounded by twice the number of kinds, and kinds come from the
 * library's layers and reasons and the configured limiter classes and scopes — never from a
 * client key — so they are few. Request and fault events are ignored.
 *
 * @example Ten thousand refusals, two lines
 * ```ts
 * import { createManualClock, createShedLogger, type LogRecord } from "serve-hygiene";
 * const lines: LogRecord[] = [];
 * const clock = createManualClock();
 * const sink = createShedLogger({ log: (r) => lines.push(r), intervalMs: 10_000, clock });
 * for (let i = 0; i < 10_000; i++) sink({ type: "deny", layer: "concurrency", reason: "shed", status: 503 });
 * sink.flush();
 * console.assert(lines.length === 2 && lines[1]!.count === 9_999);
 * ```
 */
export function createShedLogger(options: ShedLoggerOptions): ShedLogger {
  const what = "create shed logger";
  const o = _options(what, options, SHED_LOGGER_KEYS);
  const log = o.log;
  if (typeof log !== "function") {
    throw new TypeError(`Cannot ${what} as "log" must be a function: current value is ${_show(log)}`);
  }
  const intervalMs = _durationMs(what, "intervalMs", _given(o.intervalMs, 10_000));
  const clock = o.clock ?? systemClock;
  const kinds = new Map<string, _Kind>();
  let intervalStart = 0;

  const write = (record: LogRecord) => {
    try {
      _settleQuietly(log(record) as unknown);
    } catch {
      // A failing logger must not fail the request whose refusal it was told about.
    }
  };

  const flush = () => {
    for (const kind of kinds.values()) {
      if (kind.unlogged === 0) continue;
      write({ level: "warn", msg: "requests refused", ..._fields(kind), count: kind.unlogged, intervalMs });
      kind.unlogged = 0;
    }
  };

  const deny = (event: DenyEvent) => {
    const now = clock.now();
    // A non-finite reading compares false and counts into the current interval: a broken
    // clock may delay summaries until flush(), but never turns into a log storm.
    if (kinds.size > 0 && now - intervalStart >= intervalMs) {
      flush();
      kinds.clear();
    }
    if (kinds.size === 0) intervalStart = now;
    const key = `${event.layer}\0${event.reason}\0${event.limiterClass ?? ""}\0${event.scope ?? ""}`;
    const kind = kinds.get(key);
    if (kind !== undefined) {
      kind.unlogged++;
      return;
    }
    const fresh: _Kind = {
      layer: event.layer,
      reason: event.reason,
      limiterClass: event.limiterClass,
      scope: event.scope,
      unlogged: 0,
    };
    kinds.set(key, fresh);
    write({ level: "warn", msg: "request refused", ..._fields(fresh), status: event.status });
  };

  return Object.assign(
    function shedLog(event: HygieneEvent) {
      try {
        if (event?.type === "deny") deny(event);
      } catch {
        // A sink must not throw (a clock that throws, say): the refusal goes unlogged.
      }
    },
    { flush },
  );
}

/** The kind's fields for a log record, without the ones the event did not carry. */
function _fields(kind: _Kind): Record<string, string> {
  const fields: Record<string, string> = { layer: kind.layer, reason: kind.reason };
  if (kind.limiterClass !== undefined) fields.limiterClass = kind.limiterClass;
  if (kind.scope !== undefined) fields.scope = kind.scope;
  return fields;
}
