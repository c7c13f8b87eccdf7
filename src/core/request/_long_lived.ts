// What the guard does for responses that may outlive their handlers (SSE, long polls):
// their `context.shutdownSignal` fires at the stop, and a forced drain can end their bodies.
// One listener on the shared stop signal serves every request; none is added per request.
import type { Clock } from "../clock.ts";
import type { _Admission } from "./admission.ts";
import { _createOpenBodies } from "./_open_bodies.ts";
import { _withClose } from "./body_caps.ts";

/** How long after a forced drain's closeAll the guard itself fails the bodies still streaming. */
export const _FORCE_BODIES_AFTER_MS = 50;

export interface _LongLived {
  /** `ctx` asked for its shutdown signal: fire it now if stopping, else at the stop. */
  watch(ctx: _Admission): void;
  /** `ctx`'s handler settled; its body (if tracked) may still keep it watching. */
  settled(ctx: _Admission): void;
  /**
   * The response to send for `res`. A body that may outlive its handler — it watches the
   * shutdown, or its route turned the deadline off (noTimeout) while the service has one —
   * is tracked until it ends. Other bodies pass untouched (wrapping one costs a stream hop per
   * chunk, and turns a runtime's static body into a stream).
   */
  response(ctx: _Admission, res: Response, serviceTimeoutMs: number): Response;
  /**
   * Forced drain: bodies still streaming are failed a moment later. Where the server can cut
   * connections (closeAll, right after) the runtime cancels them itself first, quietly; where
   * it cannot (Deno after a graceful shutdown), failing the body is what closes them.
   */
  force(reason: unknown): void;
  /** Tracked bodies still streaming. */
  readonly open: number;
  dispose(): void;
}

export function _createLongLived(stopping: AbortSignal | undefined, clock: Clock): _LongLived {
  const watching = new Set<_Admission>();
  const bodies = _createOpenBodies();
  const onStop = () => {
    for (const ctx of watching) ctx.fireShutdown(stopping!.reason);
    watching.clear();
  };
  stopping?.addEventListener("abort", onStop, { once: true });
  const keep = (ctx: _Admission) => {
    if (stopping?.aborted) ctx.fireShutdown(stopping.reason);
    else if (stopping !== undefined) watching.add(ctx);
  };
  return {
    watch(ctx) {
      if (!ctx.settled) keep(ctx);
    },
    settled(ctx) {
      if (ctx.watchesShutdown) watching.delete(ctx);
    },
    response(ctx, res, serviceTimeoutMs) {
      // From the stop signal on every answer closes its connection (the adapters mark what they
      // answer from then on; this, a handler's answer to a request that was running at the signal).
      if (stopping?.aborted === true) res = _withClose(res);
      if (!ctx.watchesShutdown && !(ctx.timeoutMs === Infinity && serviceTimeoutMs !== Infinity)) return res;
      // A HEAD answer sends no body: nothing to stream, nothing to track (Hono answers HEAD with
      // a bodiless copy of the GET route's answer and drops it unread: tracked, every HEAD stayed
      // in work.streaming, its request held, for good — a soak review).
      if (ctx.request.method === "HEAD") return res;
      if (ctx.watchesShutdown) keep(ctx);
      return bodies.track(res, (cut) => {
        watching.delete(ctx);
        // Cut short (the client left, a forced drain): the context's signal fires, as it would
        // have while the handler ran — a route that ties a subscription to it lets it go.
        if (cut !== undefined) ctx.bodyCut(cut.reason, cut.clientLeft);
      });
    },
    force(reason) {
      if (bodies.size === 0) return;
      bodies.forcing(reason);
      clock.setTimeout(() => bodies.forceAll(reason), _FORCE_BODIES_AFTER_MS);
    },
    get open() {
      return bodies.size;
    },
    dispose() {
      stopping?.removeEventListener("abort", onStop);
    },
  };
}
