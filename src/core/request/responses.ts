// The answers the gates give. Bodies are short and generic on purpose: they never say which
// limit tripped or whether a credential was valid (the deny event says that, to operators).
import type { Logger } from "../host/host.ts";

/** The generic body of each refusal status (internal: shared with the gates' prebuilt answers). */
export const _TEXTS: Readonly<Record<number, string>> = {
  400: "Bad Request",
  408: "Request Timeout",
  413: "Content Too Large",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Options of {@linkcode denyResponse}. */
export interface DenyResponseOptions {
  /** Sent as `Retry-After` in whole seconds (rounded up, at least 1). */
  retryAfterMs?: number | undefined;
  /** Adds `Connection: close` (draining: the client should reconnect elsewhere). */
  close?: boolean | undefined;
  /**
   * Extra headers, e.g. the RateLimit fields: what `new Headers(…)` takes (spelled so, not
   * `HeadersInit`, which a Node project without the DOM lib does not have).
   */
  headers?: ConstructorParameters<typeof Headers>[0] | undefined;
}

/** Whole seconds for a `Retry-After` header: rounded up, at least 1, at most 2^31 - 1 (delta-seconds, not 1e+25). */
export function retryAfterSeconds(ms: number): number {
  return Number.isFinite(ms) && ms > 1000 ? Math.min(Math.ceil(ms / 1000), 2_147_483_647) : 1;
}

/**
 * A refusal: `text/plain`, a generic body, `Retry-After` where given, `Cache-Control: no-store`.
 *
 * @example
 * ```ts
 * import { denyResponse } from "serve-hygiene";
 * const res = denyResponse(503, { retryAfterMs: 1500 });
 * console.assert(res.status === 503 && res.headers.get("retry-after") === "2");
 * ```
 */
export function denyResponse(status: number, options: DenyResponseOptions = {}): Response {
  const headers = new Headers(options.headers);
  headers.set("content-type", "text/plain; charset=utf-8");
  headers.set("cache-control", "no-store");
  if (options.retryAfterMs !== undefined) headers.set("retry-after", String(retryAfterSeconds(options.retryAfterMs)));
  if (options.close) headers.set("connection", "close");
  return new Response(_TEXTS[status] ?? "Error", { status, headers });
}

/**
 * The answer of an adapter whose guarded fetch failed (the guard answers a handler's failure
 * itself; this is the last resort under it): `error` logged once as "guarded handler failed",
 * then the guard's own generic 500.
 *
 * @example
 * ```ts
 * import { fallbackResponse } from "./responses.ts";
 * const res = fallbackResponse(new Error("boom"), () => {});
 * console.assert(res.status === 500 && (await res.text()) === "Internal Server Error");
 * ```
 */
export function fallbackResponse(error: unknown, log: Logger): Response {
  log({ level: "error", msg: "guarded handler failed", error });
  return denyResponse(500);
}
