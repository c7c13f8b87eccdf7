// The example edge server's body, loaded by examples/edge-server.ts once its startup stop is
// installed (examples/edge/startup.ts): configuration, the shared store, the app, serve().
import { createShedLogger, exitCodeFor, type ServeHandle, type ServeOptions } from "../../src/mod.ts";
import { createPrometheusExporter } from "../../src/prometheus/mod.ts";
import { createAuthLimiter, createEdgeApp, isHealthProbe, isProbe, PROBE_PATHS } from "./app.ts";
import { ConfigError, configErrorFrom, readEdgeConfig, redactUrl } from "./config.ts";
import { edgeErrorHandler } from "./errors.ts";
import { createIpLimiter, StoreUnreachableError } from "./shared_limit.ts";
import { endStartup, runtime } from "./startup.ts";

const log = (record: { level: string; msg: string; [k: string]: unknown }) =>
  console.log(JSON.stringify({ time: new Date().toISOString(), ...record }, (_k, v) =>
    v instanceof Error ? { name: v.name, message: v.message } : v === Infinity ? "Infinity" : v));

const env: Record<string, string | undefined> = runtime === "deno" ? Deno.env.toObject() : process.env;

/** A bad configuration ends startup with exit 2 and a message naming the variables. */
function invalid(error: ConfigError): never {
  console.error(JSON.stringify({ level: "error", msg: "invalid configuration", variable: error.variable, variables: error.variables, error: error.message }));
  (runtime === "deno" ? Deno.exit : process.exit)(2);
  throw error; // unreachable: keeps the type checker sure it never returns
}

let config;
try {
  config = readEdgeConfig(env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  invalid(error);
}

const exporter = createPrometheusExporter();
const shedLog = createShedLogger({ log });
// HYGIENE_REDIS_URL shares the per-IP window across instances; Redis unreachable at startup → exit 1.
let ip;
if (config.redisUrl !== undefined) log({ level: "info", msg: "connecting to the shared store", redisUrl: redactUrl(config.redisUrl) });
try {
  ip = await createIpLimiter(config, (event) => {
    exporter.onEvent(event);
    if (event.type === "store") log({ level: event.state === "fallback" ? "warn" : "info", msg: `shared store ${event.state}`, failures: event.failures, error: event.error });
  });
} catch (error) {
  if (!(error instanceof StoreUnreachableError)) throw error;
  console.error(JSON.stringify({ level: "error", msg: "shared store unreachable", variable: "HYGIENE_REDIS_URL", error: error.message }));
  (runtime === "deno" ? Deno.exit : process.exit)(1);
  throw error;
}
const ipLimiter = ip.limiter;
const authLimiter = createAuthLimiter();
let handle: ServeHandle | undefined;

const connectionCap = runtime === "node" || (env.HYGIENE_MAX_CONNECTIONS ?? "") !== "" ? config.maxConnections : undefined;
const app = createEdgeApp({ config, health: () => handle?.health, metrics: () => exporter.render(), authLimiter });
// Expected outcomes (413, 408, a client leaving) answered quietly; anything else one JSON line.
app.onError(edgeErrorHandler(log));

const options: ServeOptions = {
  port: config.port,
  hostname: config.hostname,
  concurrencyLimit: config.concurrencyLimit,
  // Node's alone (Deno and Bun have no connection hook): given there only when set, so that the
  // library's warning says it has no effect (the deploy review: it was printed as in effect).
  maxConnections: connectionCap,
  requestTimeoutMs: config.requestTimeoutMs,
  bodyLimitBytes: config.bodyLimitBytes,
  // /upload raises the cap (its bodyLimit() in app.ts); declared here so the guard applies it
  // before the handler runs.
  routeBodyLimits: [{ path: "/upload", method: "POST", bytes: config.uploadLimitBytes }],
  drainTimeoutMs: config.drainTimeoutMs,
  preStopDelayMs: config.preStopDelayMs,
  memory: config.rssCeilingBytes === undefined ? undefined : { ceilingBytes: config.rssCeilingBytes, intervalMs: 5_000 },
  exempt: PROBE_PATHS,
  clientKey: { trustedProxies: config.trustedProxies },
  loadMonitor: config.loadMonitor,
  // The health probes are not metered: a kubelet probes from the node's address, which NAT'd
  // client traffic often shares, and a probe refused 429 once that address spent its budget
  // marked the pod unready and got it restarted. A key of their own did not do: anyone on that
  // address could spend it (a scraper of /metrics, a client fetching /healthz), and their answer
  // costs no more than a 429's. /metrics (rendering costs) is metered under a key of its own.
  rateLimits: [{ limiter: ipLimiter, scope: "ip", skip: (request) => isHealthProbe(request.url), key: (request, key) => (isProbe(request.url) ? `metrics|${key}` : key) }],
  log,
  onEvent: (event) => {
    exporter.onEvent(event);
    shedLog(event);
  },
  onError: (error, request) => log({ level: "error", msg: "handler failed", path: new URL(request.url).pathname, error }),
  onDrained: () => shedLog.flush(),
};

const adapter = runtime === "deno"
  ? await import("../../src/adapters/deno/mod.ts")
  : runtime === "bun"
  ? await import("../../src/adapters/bun/mod.ts")
  : await import("../../src/adapters/node/mod.ts");

// serve() installs its own signal handling synchronously, as it is called, and the startup stop
// goes only after it, in the same synchronous run, so a signal always finds one of them. Removed
// first, a signal Node had caught but not yet delivered was lost: the server came up and served
// on (a review: 3 of 52 SIGTERMs sent ~15 ms before it listened).
const serving = adapter.serve(app.fetch, options);
endStartup();
try {
  handle = await serving;
} catch (error) {
  // A combination readEdgeConfig did not foresee: the library's message, in the variables' names.
  const retold = configErrorFrom(error);
  if (retold !== undefined) invalid(retold);
  // Anything else is the listener's (a port in use, an address not on this host): one line, exit 1.
  console.error(JSON.stringify({ level: "error", msg: "listen failed", variables: ["HOST", "PORT"], error: error instanceof Error ? error.message : String(error) }));
  (runtime === "deno" ? Deno.exit : process.exit)(1);
  throw error; // unreachable: keeps the type checker sure `handle` is set below
}
exporter.observeGuard(handle.guard);
exporter.observeLimiter("ip", ipLimiter.size);
exporter.observeLimiter("auth", authLimiter.size);
const { hostname, port } = handle.address;
const url = `http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;
// The pid is the server's own (not npm's): what a supervisor or a test signals.
const pid = runtime === "deno" ? Deno.pid : process.pid;
log({ level: "info", msg: "listening", url, pid, runtime, hostname, port, rateStore: ip.store,
  config: { ...config, maxConnections: connectionCap, redisUrl: config.redisUrl === undefined ? undefined : redactUrl(config.redisUrl) } });

// Exit with the outcome's code (clean 0, io 1, forced 3, flush 4): on Deno a forced drain
// can leave a stuck handler's socket open, and only the exit ends it.
const exit = runtime === "deno" ? Deno.exit : process.exit;
handle.finished.then(
  (outcome) => {
    exporter.recordDrain(outcome);
    // From the stop signal to the end of the in-flight drain, on the library's clock.
    const durationMs = outcome.signalledAt === undefined ? undefined : Math.round(outcome.drainedAt - outcome.signalledAt);
    log({ level: outcome.outcome === "clean" ? "info" : "warn", msg: "drained", durationMs, ...outcome });
    // A macrotask later, as exitOnDrained does: a forced drain's 503s are written first (exiting
    // here at once, Deno reset the connections they were for).
    setTimeout(() => exit(exitCodeFor(outcome)), 0);
  },
  (error) => {
    log({ level: "error", msg: "serve failed", kind: error?.kind, error: error?.cause ?? error });
    setTimeout(() => exit(exitCodeFor(error)), 0);
  },
);
