// The client leaving, as a node-style response's close event, for the adapters whose
// request `signal` is costly to read (@hono/node-server builds an AbortController for it).
// Structural: no runtime import, so the node adapter and hygiene() on @hono/node-server share it.
import type { AbortSignalLike } from "../overload/permit.ts";

/** What it listens on: the response, whose close event fires when its connection closes. */
interface _Closing {
  on(event: "close", listener: () => void): unknown;
  off(event: "close", listener: () => void): unknown;
}

/** What says the client is already gone: the request, through its socket. */
interface _Socketed {
  readonly socket?: { readonly destroyed?: unknown } | null;
}

/**
 * An {@linkcode AbortSignalLike} over a response's close event: a response not yet answered
 * closes only when its connection does. A request waiting in the admission queue listens on
 * it (internal: the adapters give it as `ServeInfo.clientLeft`).
 */
export class _ClientLeft implements AbortSignalLike {
  readonly #request: _Socketed;
  readonly #response: _Closing;

  constructor(request: _Socketed, response: _Closing) {
    this.#request = request;
    this.#response = response;
  }

  get aborted(): boolean {
    return this.#request.socket?.destroyed === true;
  }

  addEventListener(_type: "abort", listener: () => void): void {
    // `on`, not `once`: node's once wraps each listener (a bound function and its state), and
    // the waiter removes its listener itself when it leaves the queue, whichever way.
    this.#response.on("close", listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    this.#response.off("close", listener);
  }
}
