// The example's Hono app: one route per bound the library enforces.
import { Hono } from "hono";
import { createFixedWindowLimiter, type Health, type RateLimiter } from "../../src/mod.ts";
import { bodyLimit, noTimeout, rateLimit } from "../../src/hono/mod.ts";
import type { EdgeConfig } from "./config.ts";

/**
 * The probe and metrics paths: the process-wide gates (draining, memory, load, concurrency)
 * never refuse them, so liveness stays 200 and metrics stay readable while the server sheds.
 */
export const PROBE_PATHS: readonly string[] = ["/healthz", "/readyz", "/metrics"];

export interface EdgeAppDeps {
  config: EdgeConfig;
  /** Readiness and liveness, known once the server is listening. */
  health: () => Health | undefined;
  /** The Prometheus text. */
  metrics: () => Promise<string>;
  /** The auth-class limiter of /login (exposed so metrics can watch its table). */
  authLimiter: RateLimiter;
}

/** Resolves after `ms`, or rejects as soon as `signal` fires. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}

export function createEdgeApp(deps: EdgeAppDeps): Hono {
  const app = new Hono();
  const signalOf = (c: { env: unknown; req: { raw: Request } }) =>
    (c.env as { context?: { signal: AbortSignal } } | undefined)?.context?.signal ?? c.req.raw.signal;

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

  // Server-sent events: the request timeout is off for this route; the stream ends when the client leaves.
  app.get("/events", noTimeout(), (c) => {
    const count = Math.min(Number(c.req.query("count") ?? 10) || 10, 1000);
    const every = Math.min(Number(c.req.query("every") ?? 1000) || 1000, 60_000);
    const signal = signalOf(c);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        try {
          for (let i = 0; i < count; i++) {
            controller.enqueue(encoder.encode(`id: ${i}\ndata: tick ${i}\n\n`));
            if (i + 1 < count) await sleep(every, signal);
          }
        } catch {
          // the client left or the drain forced it: stop quietly
        }
        controller.close();
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
