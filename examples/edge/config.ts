// The example edge server's configuration, from environment variables. An invalid value
// stops startup with a message naming the variable.

export interface EdgeConfig {
  port: number;
  hostname: string;
  concurrencyLimit: number;
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
}

/** A variable that names a bad value. */
export class ConfigError extends Error {
  constructor(readonly variable: string, value: string, rule: string) {
    super(`${variable} must be ${rule}: current value is ${JSON.stringify(value)}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, { min = 1, infinity = false } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (infinity && raw.toLowerCase() === "infinity") return Infinity;
  if (!/^[0-9]+$/.test(raw.trim()) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(name, raw, `an integer of at least ${min}${infinity ? ' or "Infinity"' : ""}`);
  }
  return Number(raw);
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

/** Reads the configuration; throws a {@linkcode ConfigError} naming the first bad variable. */
export function readEdgeConfig(env: Env): EdgeConfig {
  const port = integer(env, "PORT", 8000, { min: 0 });
  if (port > 65535) throw new ConfigError("PORT", env.PORT!, "an integer from 0 to 65535");
  const trusted = (env.HYGIENE_TRUSTED_PROXIES ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  return {
    port,
    hostname: env.HOST || "127.0.0.1",
    concurrencyLimit: integer(env, "HYGIENE_CONCURRENCY_LIMIT", 1024, { infinity: true }),
    maxConnections: integer(env, "HYGIENE_MAX_CONNECTIONS", 4096, { infinity: true }),
    requestTimeoutMs: integer(env, "HYGIENE_REQUEST_TIMEOUT_MS", 20_000, { infinity: true }),
    bodyLimitBytes: optional(env, "HYGIENE_BODY_LIMIT_BYTES") ?? 1024 * 1024,
    uploadLimitBytes: integer(env, "HYGIENE_UPLOAD_LIMIT_BYTES", 16 * 1024 * 1024),
    drainTimeoutMs: integer(env, "HYGIENE_DRAIN_TIMEOUT_MS", 25_000),
    rateLimit: integer(env, "HYGIENE_RATE_LIMIT", 600),
    rateWindowMs: integer(env, "HYGIENE_RATE_WINDOW_MS", 60_000),
    rssCeilingBytes: optional(env, "HYGIENE_RSS_CEILING_BYTES"),
    preStopDelayMs: integer(env, "HYGIENE_PRESTOP_DELAY_MS", 0, { min: 0 }),
    trustedProxies: trusted,
    loadMonitor: onOff(env, "HYGIENE_LOAD_MONITOR", true),
  };
}
