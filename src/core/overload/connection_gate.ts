// Gate 0, the connection cap: how many connections may be open at once, and who gives way
// at the cap. The adapter only reports what the transport sees (a connection opened, a
// request began or ended on it, it closed) and carries out the verdict (answer 503 and
// destroy, or close an idle connection); the policy lives here. It heads the request path's
// gate list (DESIGN.md) but acts per connection, before any request exists, so it is not in
// the guard's per-request list (which starts at gate 1): `serve` builds it with the guard's
// config and event sinks, and its refusals are deny events of layer "connection".
import type { DenyEvent, EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _given, _options, _positiveIntOrInfinity } from "../_validate.ts";
import { _LinkedList } from "../_linked_list.ts";

/** Options of {@linkcode createConnectionGate}. */
export interface ConnectionGateOptions {
  /**
   * Open connections at once; `Infinity` counts without refusing.
   * @default 4096
   */
  maxConnections?: number | undefined;
  /** The audit hook: every refused connection, as a deny event of layer `connection`. */
  onDeny?: ((event: DenyEvent) => void) | undefined;
  /** The metrics sink (the same one the guard is given). */
  onEvent?: EventSink | undefined;
}

/** One open connection, as the gate tracks it. Every method is idempotent after close. */
export interface ConnectionSlot {
  /** A request began on this connection (its head was parsed): it is busy. */
  requestStarted(): void;
  /** A request on this connection ended (its response finished): idle again when none is left. */
  requestEnded(): void;
  /** The connection closed, for whatever reason: its place is free. */
  closed(): void;
}

/** The connection cap. */
export interface ConnectionGate {
  readonly maxConnections: number;
  /** Connections counted open now. */
  readonly open: number;
  /** Of those, the ones with no request in progress (silent since connect, or keep-alive between requests). */
  readonly idle: number;
  /**
   * A connection opened. Below the cap it is counted; at the cap the oldest idle connection
   * is closed (through its own `close`) to make room; when none is idle the newcomer is
   * refused: a deny event is emitted and `undefined` returned, and the adapter answers 503
   * (+ `Retry-After`, {@linkcode ConnectionGate.retryAfterMs}) and destroys the socket.
   */
  accept(close: () => void): ConnectionSlot | undefined;
  /** The `Retry-After` a refused connection is sent. */
  readonly retryAfterMs: number;
  /**
   * Closes every connection with no request in progress, through its own `close` (a drain:
   * one that connected and stays silent, or sent half a head, would otherwise hold it open,
   * and the runtime counts neither as idle).
   */
  closeIdle(): void;
}

const RETRY_AFTER_MS = 1000;

/**
 * Creates the connection gate (DESIGN.md gate 0). Idle connections give way to new ones at
 * the cap, oldest idle first, so sockets that never send a byte (or keep-alive sockets
 * between requests) cannot starve real clients; only when every connection is busy in a
 * request is a newcomer refused.
 *
 * @example
 * ```ts
 * import { createConnectionGate } from "./connection_gate.ts";
 * const gate = createConnectionGate({ maxConnections: 1 });
 * let closedFirst = false;
 * const first = gate.accept(() => (closedFirst = true))!;
 * first.requestStarted();
 * console.assert(gate.accept(() => {}) === undefined); // busy: refused
 * first.requestEnded();
 * const second = gate.accept(() => {}); // idle: the first gives way
 * console.assert(second !== undefined && closedFirst && gate.open === 1);
 * ```
 */
export function createConnectionGate(options?: ConnectionGateOptions): ConnectionGate {
  const what = "create connection gate";
  const o = _options(what, options);
  const maxConnections = _positiveIntOrInfinity(what, "maxConnections", _given(o.maxConnections, 4096));
  const sinks = [o.onEvent, o.onDeny === undefined ? undefined : (e: { type: string }) => e.type === "deny" && o.onDeny!(e as DenyEvent)];
  const reporting = o.onEvent !== undefined || o.onDeny !== undefined;
  // Idle connections in the order they became idle: the first is the oldest.
  const idle = new _LinkedList<_Slot>();
  let open = 0;

  class _Slot implements ConnectionSlot {
    requests = 0;
    gone = false;
    prevLink: _Slot | undefined = undefined;
    nextLink: _Slot | undefined = undefined;
    constructor(readonly close: () => void) {}
    requestStarted(): void {
      if (this.gone) return;
      if (this.requests++ === 0) idle.delete(this);
    }
    requestEnded(): void {
      if (this.gone || this.requests === 0) return;
      if (--this.requests === 0) idle.push(this);
    }
    closed(): void {
      if (this.gone) return;
      this.gone = true;
      idle.delete(this);
      open--;
    }
  }

  return {
    maxConnections,
    retryAfterMs: RETRY_AFTER_MS,
    get open() {
      return open;
    },
    get idle() {
      return idle.size;
    },
    accept(close) {
      if (open >= maxConnections) {
        const oldest = idle.first;
        if (oldest === undefined) {
          if (reporting) _emit(sinks, { type: "deny", layer: "connection", reason: "over-cap", status: 503, retryAfterMs: RETRY_AFTER_MS });
          return undefined;
        }
        // Counted free at once: the transport's close event comes later.
        oldest.closed();
        try {
          oldest.close();
        } catch {
          // A close that fails leaves a socket the transport will end on its own.
        }
      }
      const slot = new _Slot(close);
      open++;
      idle.push(slot);
      return slot;
    },
    closeIdle() {
      for (const slot of idle.snapshot()) {
        slot.closed();
        try {
          slot.close();
        } catch {
          // As at the cap: a close that fails leaves a socket the transport will end on its own.
        }
      }
    },
  };
}
