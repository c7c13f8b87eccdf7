// The example edge server's configuration, from environment variables. An invalid value
// stops startup with a message naming the variable.

export interface EdgeConfig {
  port: number;
  hostname: string;
  /** Undefined: the library's adaptive limit. */
  concurrencyLimit: number | undefined;
  maxConnections: number;
  requestTimeoutMs: number;
  bodyLimitBytes: number | undefined;
  uploadLimitBytes: number;
  drainTimeoutMs: number;
  rateLimit: number;
  rateWindowMs: number;
  rssCeilingBytes: number | undefined;
  preStopDelayMs: number;
  trustedProxies: string[];
  loadMonitor: boolean;
  /** `HYGIENE_REDIS_URL`: the per-IP limit is shared through this Redis/Valkey when set. */
  redisUrl: string | undefined;
  /** `HYGIENE_REDIS_FAILURE`: what a failed store call does to the request, "closed" (429) or "open". */
  redisFailure: "open" | "closed";
  /** `HYGIENE_REDIS_INSTANCES`: instances sharing the limit (the insurance limiter enforces limit ÷ this). */
  redisInstances: number;
  /** `HYGIENE_REDIS_TIMEOUT_MS`: the longest a request waits on the store before failing open or closed. */
  redisTimeoutMs: number;
}

/** A bad value, or a bad combination: names the variable (and every other one involved). */
export class ConfigError extends Error {
  /** `variable` first, then the others the rule involves. */
  readonly variables: readonly string[];
  constructor(readonly variable: string, value: string, rule: string, involved: readonly string[] = []) {
    super(`${variable} must be ${rule}: current value is ${JSON.stringify(value)}`);
    this.name = "ConfigError";
    this.variables = [variable, ...involved];
  }
}

/** The longest delay a timer takes (2^31 - 1 ms); the library refuses longer durations. */
const MAX_MS = 2 ** 31 - 1;

/** The library's option names, as this example's environment spells them. */
const VARIABLE_OF: Readonly<Record<string, string>> = {
  concurrencyLimit: "HYGIENE_CONCURRENCY_LIMIT",
  maxConnections: "HYGIENE_MAX_CONNECTIONS",
  requestTimeoutMs: "HYGIENE_REQUEST_TIMEOUT_MS",
  bodyLimitBytes: "HYGIENE_BODY_LIMIT_BYTES",
  drainTimeoutMs: "HYGIENE_DRAIN_TIMEOUT_MS",
  preStopDelayMs: "HYGIENE_PRESTOP_DELAY_MS",
  ceilingBytes: "HYGIENE_RSS_CEILING_BYTES",
  trustedProxies: "HYGIENE_TRUSTED_PROXIES",
  limit: "HYGIENE_RATE_LIMIT",
  windowMs: "HYGIENE_RATE_WINDOW_MS",
  expectedInstances: "HYGIENE_REDIS_INSTANCES",
  timeoutMs: "HYGIENE_REDIS_TIMEOUT_MS",
};

/**
 * A library validation error met at startup (a combination readEdgeConfig did not foresee),
 * retold with the environment's names: every quoted option name becomes its variable.
 */
export function configErrorFrom(error: unknown): ConfigError | undefined {
  if (!(error instanceof RangeError || error instanceof TypeError)) return undefined;
  const involved: string[] = [];
  const message = error.message.replace(/"([A-Za-z]+)"/g, (quoted, field: string) => {
    const variable = VARIABLE_OF[field];
    if (variable === undefined) return quoted;
    if (!involved.includes(variable)) involved.push(variable);
    return variable;
  });
  if (involved.length === 0) return undefined;
  const retold = new ConfigError(involved[0]!, "", "", involved.slice(1));
  retold.message = message;
  return retold;
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, { min = 1, infinity = false, max = Number.MAX_SAFE_INTEGER } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (infinity && raw.toLowerCase() === "infinity") return Infinity;
  if (!/^[0-9]+$/.test(raw.trim()) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(name, raw, `an integer of at least ${min}${infinity ? ' or "Infinity"' : ""}`);
  }
  if (Number(raw) > max) throw new ConfigError(name, raw, `at most ${max}${max === MAX_MS ? " ms (2^31 - 1, the longest timer delay)" : ""}${infinity ? ' or "Infinity"' : ""}`);
  return Number(raw);
}

/** A duration variable: milliseconds, at most 2^31 - 1. */
function duration(env: Env, name: string, fallback: number, options: { min?: number; infinity?: boolean } = {}): number {
  return integer(env, name, fallback, { ...options, max: MAX_MS });
}

/** `a` must be strictly below `b` (as the library requires at startup). */
function below(env: Env, a: string, av: number, b: string, bv: number, why: string): void {
  if (av < bv) return;
  throw new ConfigError(a, env[a] || `${av} (the default)`, `below ${b} (${bv === Infinity ? "Infinity" : bv}): ${why}`, [b]);
}

function optional(env: Env, name: string): number | undefined {
  return env[name] === undefined || env[name] === "" ? undefined : integer(env, name, 0);
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "on" || raw === "off") return raw === "on";
  throw new ConfigError(name, raw, '"on" or "off"');
}

function openClosed(env: Env, name: string, fallback: "open" | "closed"): "open" | "closed" {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "open" || raw === "closed") return raw;
  throw new ConfigError(name, raw, '"open" or "closed"');
}

/**
 * A `redis://` or `rediss://` URL with a host — its path a database number if any, its user and
 * password percent-encoded — or undefined when unset. Checked here as node-redis reads it: a
 * path that is no number (`/abc`, `/0/1`) or a stray `%` in the password passed, and node-redis
 * then threw at startup, a stack trace and exit 1 (the deploy review).
 */
function redisUrl(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    url = undefined; // reported below
  }
  if (url === undefined || (url.protocol !== "redis:" && url.protocol !== "rediss:") || url.hostname === "" || !/^\/?\d*$/.test(url.pathname)) {
    throw new ConfigError(name, redactUrl(raw), "a redis:// or rediss:// URL with a host, a database number as its path if any, and its user and password percent-encoded (redis://user:pass@host:6379/0)");
  }
  return raw;
}

/** The URL with its password replaced by "***", for logs and messages. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password === "") return raw;
    url.password = "***";
    return url.href;
  } catch {
    return raw.replace(/:[^:@/]*@/, ":***@");
  }
}

/** Reads the configuration; throws a {@linkcode ConfigError} naming the first bad variable. */
export function readEdgeConfig(env: Env): EdgeConfig {
  const port = integer(env, "PORT", 8000, { min: 0 });
  if (port > 65535) throw new ConfigError("PORT", env.PORT!, "an integer from 0 to 65535");
  const trusted = (env.HYGIENE_TRUSTED_PROXIES ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  const config: EdgeConfig = {
    port,
    hostname: env.HOST || "127.0.0.1",
    concurrencyLimit: env.HYGIENE_CONCURRENCY_LIMIT === undefined || env.HYGIENE_CONCURRENCY_LIMIT === ""
      ? undefined
      : integer(env, "HYGIENE_CONCURRENCY_LIMIT", 0, { infinity: true }),
    maxConnections: integer(env, "HYGIENE_MAX_CONNECTIONS", 4096, { infinity: true }),
    requestTimeoutMs: duration(env, "HYGIENE_REQUEST_TIMEOUT_MS", 20_000, { infinity: true }),
    bodyLimitBytes: optional(env, "HYGIENE_BODY_LIMIT_BYTES") ?? 1024 * 1024,
    uploadLimitBytes: integer(env, "HYGIENE_UPLOAD_LIMIT_BYTES", 16 * 1024 * 1024),
    drainTimeoutMs: duration(env, "HYGIENE_DRAIN_TIMEOUT_MS", 25_000),
    rateLimit: integer(env, "HYGIENE_RATE_LIMIT", 600),
    rateWindowMs: duration(env, "HYGIENE_RATE_WINDOW_MS", 60_000),
    rssCeilingBytes: optional(env, "HYGIENE_RSS_CEILING_BYTES"),
    preStopDelayMs: duration(env, "HYGIENE_PRESTOP_DELAY_MS", 0, { min: 0 }),
    trustedProxies: trusted,
    loadMonitor: onOff(env, "HYGIENE_LOAD_MONITOR", true),
    redisUrl: redisUrl(env, "HYGIENE_REDIS_URL"),
    redisFailure: openClosed(env, "HYGIENE_REDIS_FAILURE", "closed"),
    redisInstances: integer(env, "HYGIENE_REDIS_INSTANCES", 1),
    redisTimeoutMs: duration(env, "HYGIENE_REDIS_TIMEOUT_MS", 50),
  };
  // The library's startup checks between values, said with the variables' names.
  if (config.requestTimeoutMs !== Infinity) below(env, "HYGIENE_REQUEST_TIMEOUT_MS", config.requestTimeoutMs, "HYGIENE_DRAIN_TIMEOUT_MS", config.drainTimeoutMs,
    'a request admitted just before SIGTERM must reach its own deadline inside the drain window (or set it to "Infinity")');
  below(env, "HYGIENE_PRESTOP_DELAY_MS", config.preStopDelayMs, "HYGIENE_DRAIN_TIMEOUT_MS", config.drainTimeoutMs,
    "the pre-stop delay is spent inside the drain window");
  if (config.requestTimeoutMs !== Infinity && config.preStopDelayMs > 0 && !(config.preStopDelayMs + config.requestTimeoutMs < config.drainTimeoutMs)) {
    throw new ConfigError("HYGIENE_DRAIN_TIMEOUT_MS", env.HYGIENE_DRAIN_TIMEOUT_MS || `${config.drainTimeoutMs} (the default)`,
      `above HYGIENE_PRESTOP_DELAY_MS + HYGIENE_REQUEST_TIMEOUT_MS (${config.preStopDelayMs} + ${config.requestTimeoutMs}): requests are still admitted during the pre-stop delay, and one admitted at its end must reach its own deadline inside the drain window`,
      ["HYGIENE_PRESTOP_DELAY_MS", "HYGIENE_REQUEST_TIMEOUT_MS"]);
  }
  return config;
}
