import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { type _KeyList, _onlyKnown, _show, type EventSink, type Guard, type HygieneEvent, type SizeGauge } from "../core/mod.ts";
import { _boolean, _buckets, _prefix, _registry, _typeError, _unclaimed } from "./_exporter_options.ts";
import { _capped } from "./_labels.ts";

/** Options of {@linkcode createPrometheusExporter}. */
export interface PrometheusExporterOptions {
  /** Where the families are registered; pass the host's own to serve one page. @default a new Registry */
  registry?: Registry | undefined;
  /** Prepended to every family name; empty, or a metric-name start without colons. @default "serve_hygiene_" */
  prefix?: string | undefined;
  /** Also register prom-client's process metrics (unprefixed `process_*`, `nodejs_*`). @default false */
  defaultMetrics?: boolean | undefined;
  /** Upper bounds of the request-duration buckets, in seconds, increasing. @default [0.005 … 10, 20, 30] */
  durationBuckets?: readonly number[] | undefined;
}

/** What the exporter reads from a guard at scrape time; a {@linkcode Guard} fits. */
export type ObservedGuard = Pick<Guard, "inFlight" | "stragglers" | "memory" | "load"> & {
  /** The concurrency limit (gate 7): its current limit and its waiters. Optional for older callers. */
  readonly concurrency?: { readonly limit: number; readonly waiting: number };
  /** Requests waiting at the load monitor (for a later turn, or for a held refusal). Optional for older callers. */
  readonly waitingForTurn?: number;
};

/** A Prometheus binding over the core's events and live state. */
export interface PrometheusExporter {
  readonly registry: Registry;
  /** Give it to `createGuard({ onEvent })` and the limiters' `onEvent`. Never throws. */
  readonly onEvent: EventSink;
  /** Reads this guard's live state at every scrape. A second call replaces the first guard. */
  observeGuard(guard: ObservedGuard): void;
  /** Reads a limiter's key-table size at every scrape; a class observed again is replaced. */
  observeLimiter(limiterClass: string, size: SizeGauge): void;
  /** Counts one finished drain (give it `runUntilDrained`'s outcome). */
  recordDrain(outcome: { readonly outcome: "clean" | "forced" }): void;
  /** The registry's exposition text, for a `/metrics` response or to concatenate with another. */
  render(): Promise<string>;
  /** The Content-Type header of `render()`'s text. */
  readonly contentType: string;
}

const OUTCOMES = new Set(["ok", "error", "timeout", "aborted"]);
const FAILED = new Set(["open", "closed"]);
const DRAINS = new Set(["clean", "forced"]);
const STORE_STATES = new Set(["fallback", "recovered"]);

/** `value` when it is a number that can be reported, else undefined (no sample). */
const _known = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? undefined : value);
const _flag = (on: boolean) => (on ? 1 : 0);

/** Every option of {@linkcode PrometheusExporterOptions}: any other key is refused. */
const EXPORTER_KEYS: _KeyList<PrometheusExporterOptions> = { registry: true, prefix: true, defaultMetrics: true, durationBuckets: true };

/**
 * Creates the Prometheus exporter: counters fed by the core's events, and gauges that read
 * a guard's and its limiters' live state when scraped. Every label comes from the library's
 * own vocabulary or configuration (layer, reason, limiter class, scope); no client key,
 * address or path is ever a label.
 *
 * Rate denials with no limiter class or no scope are counted with `class=""` / `scope=""`,
 * which Prometheus treats as the label being absent.
 *
 * @example Counting a guard's requests, and a /metrics response
 * ```ts
 * import { createGuard, createManualClock } from "serve-hygiene";
 * import { createPrometheusExporter } from "serve-hygiene/prometheus";
 * const metrics = createPrometheusExporter();
 * const guard = createGuard({ concurrencyLimit: 64, onEvent: metrics.onEvent, clock: createManualClock() });
 * metrics.observeGuard(guard);
 * await guard.wrap(() => new Response("hello"))(new Request("http://localhost/"));
 * const text = await metrics.render();
 * console.assert(text.includes('serve_hygiene_request_duration_seconds_count{outcome="ok"} 1'));
 * const page = new Response(text, { headers: { "content-type": metrics.contentType } });
 * console.assert(page.headers.get("content-type")!.startsWith("text/plain"));
 * guard.dispose();
 * ```
 */
export function createPrometheusExporter(options?: PrometheusExporterOptions): PrometheusExporter {
  if (options !== undefined && (typeof options !== "object" || options === null || Array.isArray(options))) {
    throw new TypeError(`Cannot create prometheus exporter as the options must be an object: current value is ${_show(options)}`);
  }
  const o = _onlyKnown("create prometheus exporter", options ?? {}, EXPORTER_KEYS);
  const registry = _registry(o.registry) ?? new Registry();
  const prefix = _prefix(o.prefix);
  const defaultMetrics = _boolean("defaultMetrics", o.defaultMetrics, false);
  const buckets = _buckets(o.durationBuckets);

  _unclaimed(registry, prefix);

  let guard: ObservedGuard | undefined;
  const limiters = new Map<string, SizeGauge>();
  const registers = [registry];
  const live = (name: string, help: string, read: () => number | undefined) =>
    new Gauge({
      name: prefix + name,
      help,
      registers,
      collect() {
        const value = read();
        if (value === undefined) this.remove({});
        else this.set(value);
      },
    });
  const perLimiter = (name: string, help: string, read: (size: SizeGauge) => number) =>
    new Gauge({
      name: prefix + name,
      help,
      registers,
      labelNames: ["class"],
      collect() {
        this.reset();
        for (const [cls, size] of limiters) {
          const value = _known(read(size));
          if (value !== undefined) this.set({ class: cls }, value);
        }
      },
    });

  live("requests_in_flight", "Handlers running now (permits held), stragglers included.", () => guard?.inFlight);
  live("stragglers", "Requests answered 408 whose handlers have not settled yet.", () => guard?.stragglers);
  // The adaptive limit moves with handler latency; +Inf when uncapped.
  live("concurrency_limit", "The concurrency limit now (adaptive by default): handlers allowed to run at once.", () => guard?.concurrency?.limit);
  live("queue_waiting", "Requests waiting in the admission queue for a permit.", () => guard?.concurrency?.waiting);
  live("turn_waiting", "Requests waiting at the load monitor: for a later event-loop turn (Node, Bun), or for their held 503 (Deno).", () => guard?.waitingForTurn);
  perLimiter("limiter_keys", "Keys held in a rate limiter's table.", (size) => size.value);
  perLimiter("limiter_keys_capacity", "The most keys a rate limiter's table holds (0: disabled).", (size) => size.capacity);
  live("resident_memory_bytes", "Resident set size at the memory ceiling's last read.", () => _known(guard?.memory?.lastRss));
  live("memory_shedding", "1 while the memory ceiling sheds new requests.", () => guard && _flag(guard.memory?.shedding === true));
  live("event_loop_delay_seconds", "Smoothed event-loop delay measured by the load monitor.", () => {
    const load = guard?.load;
    // A stopped monitor has no current measurement; its last one would read as live.
    return load?.running ? _known(load.smoothedDelayMs / 1000) : undefined;
  });
  live("event_loop_busy", "1 while the load monitor reads the event loop as busy.", () => guard?.load && _flag(guard.load.busy));
  live("admit_share", "Share of new requests the load monitor admits (1 when normal).", () => {
    const load = guard?.load;
    // A stopped monitor admits everything (it fails open) whatever share it last computed.
    return load === undefined ? undefined : load.running ? _known(load.admitShare) : 1;
  });

  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    new Counter<L>({ name: prefix + name, help, labelNames, registers });
  const denials = counter("denials_total", "Requests refused, by layer and reason.", ["layer", "reason"]);
  const rateDenials = counter("rate_limit_denials_total", "Rate-limit refusals, by limiter class and refusing scope.", [
    "class",
    "scope",
  ]);
  const drains = counter("drains_total", "Drains finished, by outcome.", ["outcome"]);
  const faults = counter("faults_total", "A regulator's own state broke, by source and how it failed.", ["source", "failed"]);
  const storeTransitions = counter("store_transitions_total", "A shared rate store fell back to the insurance limiters, or recovered.", [
    "store",
    "state",
  ]);
  const storeFallback = new Gauge({
    name: prefix + "store_fallback",
    help: "1 while a shared rate store falls back to its limiters' in-memory insurance.",
    labelNames: ["store"],
    registers,
  });
  const durations = new Histogram({
    name: prefix + "request_duration_seconds",
    help: "Time from the request's arrival (waits at the gates included) until its handler settled.",
    labelNames: ["outcome"],
    buckets,
    registers,
  });
  // Known label sets start at 0 so rate() sees their first increment.
  for (const outcome of OUTCOMES) durations.zero({ outcome });
  for (const outcome of DRAINS) drains.inc({ outcome }, 0);

  const layer = _capped(), reason = _capped(), cls = _capped(), scope = _capped(), source = _capped(), store = _capped();
  const count = (event: HygieneEvent) => {
    if (event.type === "deny") {
      denials.inc({ layer: layer(event.layer), reason: reason(event.reason) });
      if (event.layer === "rate") rateDenials.inc({ class: cls(event.limiterClass), scope: scope(event.scope) });
    } else if (event.type === "request") {
      const seconds = event.durationMs / 1000;
      if (OUTCOMES.has(event.outcome) && seconds >= 0 && seconds !== Infinity) {
        durations.observe({ outcome: event.outcome }, seconds);
      }
    } else if (event.type === "fault" && FAILED.has(event.failed)) {
      faults.inc({ source: source(event.source), failed: event.failed });
    } else if (event.type === "store" && STORE_STATES.has(event.state)) {
      const name = store(event.store);
      storeTransitions.inc({ store: name, state: event.state });
      storeFallback.set({ store: name }, event.state === "fallback" ? 1 : 0);
    }
  };

  if (defaultMetrics && registry.getSingleMetric("process_cpu_seconds_total") === undefined) {
    // Skipped when the host's registry already has them: registering twice would throw.
    collectDefaultMetrics({ register: registry });
  }

  return {
    registry,
    onEvent: function onEvent(event) {
      try {
        count(event);
      } catch {
        // A malformed event must never turn a request into a crash; it is simply not counted.
      }
    },
    observeGuard(next) {
      if (typeof next !== "object" || next === null) _typeError("observe guard", "guard", "a guard", next);
      guard = next;
    },
    observeLimiter(limiterClass, size) {
      const what = "observe limiter";
      if (typeof limiterClass !== "string" || limiterClass === "") {
        _typeError(what, "limiterClass", "a non-empty string", limiterClass);
      }
      if (typeof size !== "object" || size === null || !("value" in size)) _typeError(what, "size", "a SizeGauge", size);
      limiters.set(limiterClass, size);
    },
    recordDrain(outcome) {
      const value = (outcome as { outcome?: unknown } | null)?.outcome;
      if (typeof value !== "string" || !DRAINS.has(value)) _typeError("record drain", "outcome", '"clean" or "forced"', value);
      drains.inc({ outcome: value });
    },
    render: () => registry.metrics(),
    // Read when asked: the host may switch its registry to OpenMetrics after this (a review).
    get contentType() {
      return registry.contentType;
    },
  };
}
