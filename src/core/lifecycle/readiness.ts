import type { ShutdownController } from "./shutdown_controller.ts";
import { type _KeyList, _options } from "../_validate.ts";

/** Options of {@linkcode createHealth}. Both are optional: without them readiness is always ok. */
export interface HealthOptions {
  /** Not ready from the instant its signal fires (pre-stop delay included). */
  controller?: Pick<ShutdownController, "signal"> | undefined;
  /** Not ready while the memory ceiling is shedding. A flag that cannot be read counts as not shedding (fails open). */
  memory?: { readonly shedding: boolean } | undefined;
}

/** A readiness answer. Health probes answer without saying why to the client; `reason` is for logs and tests. */
export interface Readiness {
  readonly ok: boolean;
  readonly reason?: "draining" | "memory";
}

/** Readiness (take me out of rotation?) and liveness (restart me?) checks, plus Web handlers for both. */
export interface Health {
  /** Not ready while draining or shedding on memory. */
  ready(): Readiness;
  /** Always ok while the process can answer: draining or shedding never warrants a restart. */
  live(): { readonly ok: true };
  /** 200 when ready, 503 otherwise; generic body, `Cache-Control: no-store`. */
  readyz(): Response;
  /** Always 200; generic body, `Cache-Control: no-store`. */
  healthz(): Response;
}

const READY: Readiness = Object.freeze({ ok: true });
const DRAINING: Readiness = Object.freeze({ ok: false, reason: "draining" });
const SHEDDING: Readiness = Object.freeze({ ok: false, reason: "memory" });
const LIVE = Object.freeze({ ok: true } as const);

function _shedding(memory: { readonly shedding: boolean } | undefined): boolean {
  try {
    return memory?.shedding === true;
  } catch {
    return false; // monitors fail open
  }
}

function _plain(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store" },
  });
}

/** Every option of {@linkcode HealthOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
const HEALTH_KEYS: _KeyList<HealthOptions> = { controller: true, memory: true };

/**
 * Creates the readiness and liveness checks. Readiness turns not-ready the moment the
 * controller's signal fires — so it fails through any pre-stop delay while the server
 * still accepts — and while memory is shedding; liveness stays ok throughout.
 *
 * @example Readiness fails at the signal, liveness does not
 * ```ts
 * import { createHealth, createShutdownController } from "serve-hygiene";
 * const controller = createShutdownController({ mode: "manual" });
 * const health = createHealth({ controller });
 * console.assert(health.readyz().status === 200);
 * controller.shutdown("deploy");
 * console.assert(health.ready().reason === "draining" && health.readyz().status === 503);
 * console.assert(health.live().ok && health.healthz().status === 200);
 * ```
 */
export function createHealth(options?: HealthOptions): Health {
  const o = _options("create health", options, HEALTH_KEYS);
  const { controller, memory } = o;
  const ready = (): Readiness => {
    if (controller?.signal.aborted) return DRAINING;
    if (_shedding(memory)) return SHEDDING;
    return READY;
  };
  return {
    ready,
    live: () => LIVE,
    readyz: () => (ready().ok ? _plain(200, "ok\n") : _plain(503, "not ready\n")),
    healthz: () => _plain(200, "ok\n"),
  };
}
