// What every benchmark server shares, whatever runtime serves it: the handlers, the Hono
// apps, and the guard options "every gate on, none tripping". Each server file
// (node.ts, deno.ts, bun.ts, fastify.ts) picks a variant from argv and prints
// `{"listening":PORT}` once it accepts connections.
import { Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { timeout } from "hono/timeout";
import { rateLimiter } from "hono-rate-limiter";
import { writeFileSync } from "node:fs";
import process from "node:process";
import { createFixedWindowLimiter, type Host, type ServeHandle, type ServeOptions } from "../../../src/mod.ts";
import { hygiene } from "../../../src/hono/mod.ts";

export const BODY = "hello";
/** CPU burned per request by /burn and /burn-async. */
export const BURN_MS = 2;
/** /io: what it awaits (an upstream), then the CPU it burns. */
export const IO_WAIT_MS = 20;
export const IO_BURN_MS = 0.2;

/** Spins for `ms` of wall time on the event loop (the server is pinned to one core). */
export function burn(ms = BURN_MS): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* spin */ }
}

/** One event-loop turn (setImmediate: all three runtimes have it, without setTimeout's 1 ms clamp). */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The load generator's send timestamp, echoed so it can time 2xx responses one by one. */
export const echo = (request: Request): Record<string, string> => {
  const t = request.headers.get("x-t");
  return t === null ? { "content-type": "text/plain" } : { "content-type": "text/plain", "x-t": t };
};

/**
 * The part-2 and part-4 handlers as one fetch handler: `/burn` burns 2 ms synchronously,
 * `/burn-async` yields one turn then burns, `/io` waits 20 ms on a timer (an upstream) then
 * burns 0.2 ms, `/slow` waits 10 ms on a timer (drain), and
 * anything else answers "hello". `admitted` counts the calls that reached it.
 */
export const counter = { admitted: 0 };
export async function workHandler(request: Request): Promise<Response> {
  counter.admitted++;
  const path = request.url.slice(request.url.indexOf("/", 8));
  if (path === "/burn") burn();
  else if (path === "/burn-async") {
    await turn();
    burn();
  } else if (path === "/io") {
    await sleep(IO_WAIT_MS);
    burn(IO_BURN_MS);
  } else if (path === "/slow") await sleep(10);
  return new Response(path === "/" ? BODY : "ok", { headers: echo(request) });
}

export const helloHandler = (): Response => new Response(BODY, { headers: { "content-type": "text/plain" } });

/**
 * The reference refusal: the 15-line in-flight cap anyone can write around a raw server. At
 * `cap` requests in flight the next is refused at once with `refuse` (a prebuilt answer);
 * otherwise it counts one in, runs the handler and counts it out when the handler settles.
 * One definition for every runtime: `refuse` and `handler` take the runtime's own arguments
 * (a Request on Bun and Deno, req/res on node:http).
 */
export function inFlightCap<X, Y, R>(cap: number, handler: (x: X, y: Y) => R | Promise<R>, refuse: (x: X, y: Y) => R): (x: X, y: Y) => R | Promise<R> {
  let inFlight = 0;
  const run = async (x: X, y: Y): Promise<R> => {
    try {
      return await handler(x, y);
    } finally {
      inFlight--;
    }
  };
  // Two declared parameters, not a rest parameter: Deno.serve passes no Request at all to a
  // handler whose length is 0.
  return (x: X, y: Y) => {
    if (inFlight >= cap) return refuse(x, y);
    inFlight++;
    return run(x, y);
  };
}

/** The cap's refusal, built once: the same status, headers and body as serve-hygiene's 503. */
export const REFUSAL_BODY = "Service Unavailable";
export const REFUSAL_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/plain; charset=utf-8",
  "cache-control": "no-store",
  "retry-after": "1",
});
export const refuseFetch = (): Response => new Response(REFUSAL_BODY, { status: 503, headers: REFUSAL_HEADERS });
/** Part 2: the 15-line cap at the size issue 14 measured it with (32 in flight). */
export const OVERLOAD_CAP = 32;
/** Part 1: the cap high above the connection count (never trips). Part 6 holds the one permit of a cap of 1. */
export const HOT_CAP = 1024;

/**
 * Part 6's handler: `/hold` never settles (it holds its permit until the server is killed),
 * anything else answers "hello". With a limit of 1 and one `/hold` in flight, every other
 * request is a refusal.
 */
export const HOLD_PATH = "/hold";
export function holdHandler(request: Request): Response | Promise<Response> {
  if (request.url.endsWith(HOLD_PATH)) return new Promise<Response>(() => {});
  return helloHandler();
}

const GiB = 1024 * 1024 * 1024;

/**
 * Part 1's "every gate on, none tripping": draining gate, memory ceiling (far above RSS),
 * load monitor, a per-IP fixed window (every wrk connection shares 127.0.0.1, so its limit
 * is out of reach), a per-key in-flight cap above the connection count, the concurrency
 * limit, a body cap and the request deadline.
 */
export function allGates(): ServeOptions {
  return {
    concurrencyLimit: 1024,
    requestTimeoutMs: 20_000,
    bodyLimitBytes: 1024 * 1024,
    memory: { ceilingBytes: 8 * GiB },
    loadMonitor: true,
    rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1e12, windowMs: 60_000, name: "ip" }), scope: "ip" }],
    inFlightPerKey: { perKey: 1024 },
    log: () => {},
    onDeny: countDenial,
  };
}

/**
 * Part 6's serve-hygiene: every gate of {@link allGates} on, the concurrency limit at 1 so the
 * one held `/hold` request makes every other request a concurrency-limit refusal — the gate an
 * in-flight cap compares with; each refusal passes every cheaper gate before it, as a real one does.
 */
export function refusalGates(): ServeOptions {
  // No admission queue (`shedWaitMs: 0`): the request past the limit is refused at once, as
  // the cap's is. With the default queue it would wait 500 ms for the held permit and the run
  // would measure a mostly idle server (~100 refusals a second), not the refusal's cost.
  return { ...allGates(), concurrencyLimit: 1, shedWaitMs: 0 };
}

/**
 * Part 6's (r4), Node only: how long a request waits in the admission queue for the held permit
 * before it is refused (`queue-timeout`) — the refusal a closed-loop storm mostly sends, which
 * on Node's head path waits untranslated and is written from prebuilt parts.
 */
export const WAITED_REFUSAL_MS = 2;

/**
 * Refusals by layer, printed to stderr once a second while there are new ones: "none
 * tripping" is checked, not assumed (the runner reports any non-2xx).
 */
// Counted by layer, then reason (no string built per refusal: under part 6's storm this
// runs 20–80 thousand times a second, and the reference cap counts nothing); the flat
// "layer/reason" record is built only when printed.
const counts = new Map<string, Map<string, number>>();
let dirty = false;
function countDenial(event: { layer: string; reason: string }): void {
  let byReason = counts.get(event.layer);
  if (byReason === undefined) counts.set(event.layer, (byReason = new Map()));
  byReason.set(event.reason, (byReason.get(event.reason) ?? 0) + 1);
  if (!dirty) {
    dirty = true;
    setTimeout(() => {
      dirty = false;
      const denials: Record<string, number> = {};
      for (const [layer, byReason] of counts) for (const [reason, n] of byReason) denials[`${layer}/${reason}`] = n;
      console.error(JSON.stringify({ denials }));
    }, 1000);
  }
}

/** The Hono app of part 1: one route answering the same small body. */
export function helloApp(before: MiddlewareHandler[] = []): Hono {
  const app = new Hono();
  for (const m of before) app.use(m);
  app.get("/", (c) => c.text(BODY));
  return app;
}

/**
 * (c2) the same app behind one middleware that does nothing but `await next()`: what Hono
 * itself charges for any middleware (its compose path instead of the single-handler one).
 */
export function noopMiddlewareApp(): Hono {
  return helloApp([async (_c, next) => {
    await next();
  }]);
}

/** (d) the same app behind serve-hygiene's app-level middleware, every gate on. */
export function hygieneApp(host: Host): Hono {
  return helloApp([hygiene(allGates(), host)]);
}

/**
 * (e) the peer stack users build today: hono-rate-limiter (memory store, keyed by the
 * peer IP, a limit out of reach), hono/body-limit (1 MiB) and hono/timeout (20 s).
 */
export function peerApp(ipOf: (c: Parameters<MiddlewareHandler>[0]) => string): Hono {
  return helloApp([
    rateLimiter({ windowMs: 60_000, limit: 1e12, standardHeaders: "draft-6", keyGenerator: ipOf }),
    bodyLimit({ maxSize: 1024 * 1024 }),
    timeout(20_000),
  ]);
}

/** Tells the runner where this server listens (it waits for this line). */
export function announce(port: number): void {
  console.log(JSON.stringify({ listening: port }));
}

/** The variant and options the runner passed: `<variant> [concurrencyLimit]`. */
export function args(argv: readonly string[]): { variant: string; limit: number | undefined; out: string | undefined } {
  const [variant = "raw", limit, out] = argv;
  return { variant, limit: limit === undefined || limit === "-" ? undefined : Number(limit), out: out === "-" ? undefined : out };
}

type Serve = (handler: (request: Request) => Response | Promise<Response>, options: ServeOptions) => Promise<ServeHandle>;

/**
 * Part 2: the adapter with its defaults (no limit given: the adaptive one) or the given
 * concurrency limit. `BENCH_SHED_WAIT_MS` sets the queue's drop threshold (the sweep),
 * `BENCH_STANDING_WAIT_MS` its bound once it stands;
 * `BENCH_TRACE=1` prints the gate state every 50 ms to stderr (the step run): the limit, the
 * permits in use, the waiters, the load monitor's admitted share, and refusals so far by layer;
 * also requests admitted so far, the server's CPU and system time in the last 50 ms, and (Node)
 * its garbage collection time so far.
 * Diagnostics (bench/http/probe.mjs): `BENCH_ADAPTIVE` the adaptive limit's options as JSON,
 * `BENCH_WAITS=1` where an admitted request's time goes (see `_waitTrace`).
 */
export async function serveLib(serve: Serve, limit: number | undefined): Promise<void> {
  const env = (name: string) => process.env[name];
  const shedWait = env("BENCH_SHED_WAIT_MS");
  const standingWait = env("BENCH_STANDING_WAIT_MS");
  const denied: Record<string, number> = {};
  const adaptive = env("BENCH_ADAPTIVE");
  const waits = env("BENCH_WAITS") === "1" ? _waitTrace(() => handle.guard.concurrency, denied) : undefined;
  const handle = await serve(waits ?? workHandler, {
    port: 0,
    hostname: "127.0.0.1",
    concurrencyLimit: limit ?? (adaptive === undefined ? undefined : JSON.parse(adaptive)),
    log: () => {},
    ...(shedWait === undefined ? {} : { shedWaitMs: Number(shedWait) }),
    ...(standingWait === undefined ? {} : { standingWaitMs: Number(standingWait) }),
    // BENCH_LOAD_MONITOR=0: the concurrency gate alone (a diagnostic subject, labelled as such).
    ...(env("BENCH_LOAD_MONITOR") === "0" ? { loadMonitor: false } : {}),
    // BENCH_TIMEOUT_MS: the request deadline (`Infinity`: none), to see what arming it costs.
    ...(env("BENCH_TIMEOUT_MS") === undefined ? {} : { requestTimeoutMs: Number(env("BENCH_TIMEOUT_MS")) }),
    onDeny: (e) => void (denied[e.layer] = (denied[e.layer] ?? 0) + 1),
  });
  if (env("BENCH_TRACE") === "1") {
    const t0 = performance.now();
    let cpu0 = process.cpuUsage();
    // The server's CPU (all threads) and, on Node, its garbage collection, per 50 ms: where a
    // storm's first seconds go (V8 optimizes a function only after some thousands of calls).
    let gcMs = 0;
    if (!("Deno" in globalThis) && !("Bun" in globalThis)) {
      const { PerformanceObserver } = await import("node:perf_hooks");
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) gcMs += e.duration;
      }).observe({ entryTypes: ["gc"] });
    }
    const trace = setInterval(() => {
      const cpu1 = process.cpuUsage();
      const cpuMs = Math.round((cpu1.user - cpu0.user + cpu1.system - cpu0.system) / 1000);
      const sysMs = Math.round((cpu1.system - cpu0.system) / 1000);
      cpu0 = cpu1;
      const { concurrency, load } = handle.guard;
      console.error(`TRACE ${JSON.stringify({ t: Math.round(performance.now() - t0), admitted: counter.admitted, cpuMs, sysMs, gcMs: Math.round(gcMs), limit: concurrency.limit, inFlight: concurrency.inFlight, waiting: concurrency.waiting, turn: handle.guard.waitingForTurn, share: load?.admitShare ?? 1, delay: load?.smoothedDelayMs ?? 0, denied })}`);
    }, 50);
    void handle.finished.finally(() => clearInterval(trace));
  }
  announce(handle.address.port);
}

/**
 * `BENCH_WAITS=1` (a diagnostic, not a measured subject): wraps the work handler and prints to
 * stderr, every second, the handler's own time (entry to settle: the await plus the wait for the
 * event loop) at p50/p90/p99, the limit, the permits in use, the waiters and the refusals so far
 * by layer. On Node, whose monotonic clock is wrk's (CLOCK_MONOTONIC), also the time from wrk's
 * send (x-t) to the handler's entry: the kernel, the loop and the admission queue together.
 */
function _waitTrace(
  concurrency: () => { limit: number; inFlight: number; waiting: number },
  denied: Record<string, number>,
): (request: Request) => Promise<Response> {
  const sameClock = !("Deno" in globalThis) && !("Bun" in globalThis);
  const us = () => Number(process.hrtime.bigint() / 1000n);
  let before: number[] = [];
  let own: number[] = [];
  const at = (xs: number[], f: number) => (xs.length === 0 ? "-" : (xs[Math.floor(f * (xs.length - 1))]! / 1000).toFixed(1));
  const line = (name: string, xs: number[]) => (xs.sort((a, b) => a - b), `${name} p50 ${at(xs, 0.5)} p90 ${at(xs, 0.9)} p99 ${at(xs, 0.99)} ms`);
  setInterval(() => {
    const c = concurrency();
    const parts = [`WAITS n=${own.length}`, ...(sameClock ? [line("sent→handler", before)] : []), line("handler", own)];
    console.error(`${parts.join(" | ")} | limit ${c.limit} inFlight ${c.inFlight} waiting ${c.waiting} ${JSON.stringify(denied)}`);
    before = [];
    own = [];
  }, 1000);
  return async (request) => {
    const sent = request.headers.get("x-t");
    const entry = us();
    const response = await workHandler(request);
    if (sent !== null) {
      before.push(entry - Number(sent));
      own.push(us() - entry);
    }
    return response;
  };
}

/** Part 4: defaults; on SIGTERM drain, write what was admitted and the outcome, exit with its code. */
export async function serveDrain(serve: Serve, out: string | undefined): Promise<void> {
  const started = Date.now();
  const handle = await serve(workHandler, {
    port: 0,
    hostname: "127.0.0.1",
    log: () => {},
    exitOnDrained: true,
    onDrained: () => out && writeFileSync(out, JSON.stringify({ admitted: counter.admitted, ranMs: Date.now() - started })),
  });
  handle.finished.then((o) => out && writeFileSync(`${out}.outcome`, JSON.stringify(o)));
  announce(handle.address.port);
}
