// What the core reports. It never bundles an exporter: hooks and sinks subscribe here, and
// the Prometheus binding lives in its own module. No event carries a client key.

/** The gate that refused a request, outermost first (DESIGN.md's request path). */
export type DenyLayer =
  | "connection"
  | "draining"
  | "memory"
  | "load"
  | "framing"
  | "rate"
  | "peer"
  | "concurrency"
  | "body"
  | "timeout"
  /** Not a gate: a route's flow queue (createFlowQueue) shed a task. */
  | "flow";

/** The audit record of one refusal. */
export interface DenyEvent {
  readonly type: "deny";
  readonly layer: DenyLayer;
  /** Why, within the layer: "shed", "busy", "over-cap", "malformed-length", "limiter-error", … */
  readonly reason: string;
  /** The HTTP status the client got. */
  readonly status: number;
  /** The Retry-After hint, where one was sent. */
  readonly retryAfterMs?: number | undefined;
  /** For rate limits: the scope whose refusal is the longest (coarsest on a tie), e.g. "global", "tenant". */
  readonly scope?: string;
  /** For rate limits: the limiter's class, e.g. "ip", "auth". */
  readonly limiterClass?: string;
}

/** A request that reached its handler, once its handler settled. */
export interface RequestEvent {
  readonly type: "request";
  readonly status: number;
  readonly durationMs: number;
  /**
   * "timeout" when 408 was sent; "aborted" when the client left before any answer (the handler
   * failed with its abort, or settled after it — `status` is then the answer made, which nobody
   * received); "error" when the handler threw (500) or the answer sent was a 5xx whoever made it
   * (a Hono app's `onError` turns a throw into a 500; a forced drain's 503); "ok" otherwise,
   * 4xx answers included (a 413 made while the body was read too).
   */
  readonly outcome: "ok" | "error" | "timeout" | "aborted";
}

/** A regulator's own state was broken; it failed open or closed as documented. */
export interface FaultEvent {
  readonly type: "fault";
  /** Which regulator: "client-key", "exempt", "refusal-headers", "rate-limiter", "rate-store", "inflight-limiter" or "memory-ceiling". */
  readonly source: string;
  readonly error: unknown;
  /** What the regulator did about it: "closed" (denied) or "open" (allowed). */
  readonly failed: "open" | "closed";
}

/**
 * A shared rate store (`serve-hygiene/redis`, or any {@linkcode RateStoreBackend}) changed
 * state: after repeated failures its limiters fall back to their in-memory insurance limiter
 * (`"fallback"`), and a half-open probe that succeeded ends that (`"recovered"`).
 */
export interface StoreEvent {
  readonly type: "store";
  readonly state: "fallback" | "recovered";
  /** The store's name (configuration, e.g. "redis"); never a client key. */
  readonly store: string | undefined;
  /** Fallback: the consecutive failures that opened the breaker. */
  readonly failures?: number;
  /** Fallback: the last failure (a timeout error, the client's error). */
  readonly error?: unknown;
}

/** Every event the core emits. */
export type HygieneEvent = DenyEvent | RequestEvent | FaultEvent | StoreEvent;

/** Receives the core's events. Must not throw; a sink that throws is ignored for that event. */
export type EventSink = (event: HygieneEvent) => void;
