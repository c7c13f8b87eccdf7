// The example's Hono app: one route per bound the library enforces.
import { type Context, Hono } from "hono";
import { createFixedWindowLimiter, type Health, type RateLimiter } from "../../src/mod.ts";
import { bodyLimit, hygieneContext, noTimeout, rateLimit } from "../../src/hono/mod.ts";
import type { EdgeConfig } from "./config.ts";

/**
 * The probe and metrics paths: the process-wide gates (draining, memory, load, concurrency)
 * never refuse them, so liveness stays 200 and metrics stay readable while the server sheds.
 */
export const PROBE_PATHS: readonly string[] = ["/healthz", "/readyz", "/metrics"];

/** The orchestrator's health probes: constant answers, never metered by the per-IP limit. */
export const HEALTH_PATHS: readonly string[] = ["/healthz", "/readyz"];

/** A request URL's path (query ignored), without parsing the URL. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "";
  const query = url.indexOf("?", start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

/** Whether a request URL's path is one of {@linkcode PROBE_PATHS}. */
export function isProbe(url: string): boolean {
  return PROBE_PATHS.includes(pathOf(url));
}

/** Whether a request URL's path is one of {@linkcode HEALTH_PATHS}. */
export function isHealthProbe(url: string): boolean {
  return HEALTH_PATHS.includes(pathOf(url));
}

export interface EdgeAppDeps {
  config: EdgeConfig;
  /** Readiness and liveness, known once the server is listening. */
  health: () => Health | undefined;
  /** The Prometheus text. */
  metrics: () => Promise<string>;
  /** The auth-class limiter of /login (exposed so metrics can watch its table). */
  authLimiter: RateLimiter;
}

/** The longest an `/events` stream stays quiet: a comment line goes out between ticks further apart. */
const HEARTBEAT_MS = 5_000;

/** Resolves after `ms`, or rejects as soon as a signal fires; its listeners go when it settles. */
function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const fired = signals.find((s) => s.aborted);
    if (fired !== undefined) return reject(fired.reason);
    const onAbort = (event: Event) => (done(), reject((event.target as AbortSignal).reason));
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener("abort", onAbort);
    };
    const timer = setTimeout(() => (done(), resolve()), ms);
    for (const s of signals) s.addEventListener("abort", onAbort, { once: true });
  });
}

export function createEdgeApp(deps: EdgeAppDeps): Hono {
  const app = new Hono();
  const signalOf = (c: Context) => hygieneContext(c)?.signal ?? c.req.raw.signal;

  app.get("/", (c) => c.text("hello from serve-hygiene\n"));

  // A slow handler that honours its signal: it stops at the deadline or when the client leaves.
  app.get("/work", async (c) => {
    const ms = Math.min(Number(c.req.query("ms") ?? 100) || 0, 600_000);
    await sleep(ms, signalOf(c));
    return c.json({ worked: ms });
  });

  // A larger cap than the service-wide one, for this route only (innermost wins).
  app.post("/upload", bodyLimit(deps.config.uploadLimitBytes), async (c) => {
    let bytes = 0;
    for await (const chunk of c.req.raw.body ?? []) bytes += chunk.byteLength;
    return c.json({ bytes });
  });

  // Server-sent events: the request timeout is off for this route. The stream ends after
  // `count` ticks, when the client leaves (the runtime cancels it), or when the server starts
  // shutting down: then it says so and ends cleanly, so the drain does not wait for it.
  app.get("/events", noTimeout(), (c) => {
    const count = Math.min(Number(c.req.query("count") ?? 10) || 10, 1000);
    const every = Math.min(Number(c.req.query("every") ?? 1000) || 1000, 60_000);
    const context = hygieneContext(c);
    const shutdown = context?.shutdownSignal;
    const encoder = new TextEncoder();
    const left = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          for (let i = 0; i < count; i++) {
            controller.enqueue(encoder.encode(`id: ${i}\ndata: tick ${i}\n\n`));
            // Between ticks a comment every HEARTBEAT_MS: a stream quiet for longer is cut by Bun's
            // idle timer (`idleTimeoutSeconds`, 10 s) and by proxies (the deploy review: every=12000 on Bun).
            for (let waited = 0; i + 1 < count && waited < every; waited += HEARTBEAT_MS) {
              if (waited > 0) controller.enqueue(encoder.encode(": keep-alive\n\n"));
              await sleep(Math.min(HEARTBEAT_MS, every - waited), left.signal, ...(shutdown === undefined ? [] : [shutdown]));
            }
          }
        } catch {
          if (left.signal.aborted) return; // the client left (or a forced drain cut the stream)
          controller.enqueue(encoder.encode("event: shutdown\ndata: reconnect elsewhere\n\n"));
        }
        controller.close();
      },
      cancel(reason) {
        left.abort(reason);
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
  });

  // The auth-class limiter runs before any credential is looked at.
  app.post("/login", rateLimit({ limiter: deps.authLimiter }), async (c) => {
    const form = await c.req.parseBody().catch(() => ({}));
    const ok = (form as Record<string, unknown>).password === "correct horse battery staple";
    return ok ? c.json({ ok: true }) : c.json({ ok: false }, 401);
  });

  app.get("/metrics", async (c) => c.body(await deps.metrics(), 200, { "content-type": "text/plain; version=0.0.4" }));
  app.get("/healthz", () => deps.health()?.healthz() ?? new Response("ok\n"));
  app.get("/readyz", () => deps.health()?.readyz() ?? new Response("not ready\n", { status: 503 }));
  return app;
}

/** The auth-class limiter: 5 attempts a minute per client. */
export function createAuthLimiter(): RateLimiter {
  return createFixedWindowLimiter({ limit: 5, windowMs: 60_000, name: "auth" });
}
