import type { Context } from "hono";
import type { ConnInfo } from "hono/conninfo";
import { _ClientLeft, _envPeer, _resetRemote, _isRequestContext, type AbortSignalLike, type GuardedInfo, type PeerAddress, type RequestContext } from "../core/mod.ts";

/**
 * Where the app-level middleware keeps the request's context on Hono's Context: a symbol
 * property, not a Hono variable (`c.set` builds a Map for the first variable of a request).
 * A registry symbol, so a route middleware from another copy of the package (a bundled
 * sub-app's) finds the context `hygiene()` put there.
 */
export const CONTEXT_KEY: unique symbol = Symbol.for("serve-hygiene.context") as never;

/** A Hono Context that the app-level middleware put a request's context on. */
export type _WithContext = Context & { [CONTEXT_KEY]?: RequestContext };

/**
 * The guard's per-request context: from the app-level `hygiene()` middleware, or — when the
 * app is served by one of serve-hygiene's adapters — from the adapter's info, which Hono
 * hands over as `c.env`. Undefined when the app runs behind no guard.
 */
export function hygieneContext(c: Context): RequestContext | undefined {
  const stored = (c as _WithContext)[CONTEXT_KEY];
  if (stored !== undefined) return stored;
  const env = c.env as Partial<GuardedInfo> | null | undefined;
  // Only the guard's own: Hono's Netlify and Lambda@Edge adapters give an env with a `context` of theirs.
  const context = env !== null && typeof env === "object" ? env.context : undefined;
  return _isRequestContext(context) ? context : undefined;
}

/**
 * The transport peer of the request under whichever server runs the app: serve-hygiene's
 * adapters (`c.env.peer`), `Bun.serve` (`c.env.requestIP`), `Deno.serve` (`c.env.remoteAddr`)
 * or @hono/node-server (`c.env.incoming.socket`). Reads the env's shape; never the runtime.
 */
export function peerOf(c: Context): PeerAddress | undefined {
  return _envPeer(c.env, c.req.raw);
}

/**
 * Hono's `GetConnInfo` for whichever server runs the app — serve-hygiene's adapters too, where
 * Hono's per-runtime helpers (`hono/bun`, `hono/deno`, `@hono/node-server/conninfo`) read a
 * runtime object `serve()`'s env is not, and threw (a 500 a request): for
 * `ipRestriction(getConnInfo, …)` and anything else that takes one. The remote is
 * {@linkcode peerOf}'s: the transport peer, before any proxy header.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { ipRestriction } from "hono/ip-restriction";
 * import { getConnInfo } from "serve-hygiene/hono";
 * const app = new Hono();
 * app.use("/admin/*", ipRestriction(getConnInfo, { allowList: ["127.0.0.1", "::1"] }));
 * ```
 */
export function getConnInfo(c: Context): ConnInfo {
  const peer = peerOf(c);
  if (peer === undefined) return { remote: {} };
  return {
    remote: {
      transport: "tcp",
      address: peer.address,
      addressType: peer.family,
      ...(peer.port === undefined ? {} : { port: peer.port }),
    },
  };
}

/**
 * Whether the client left, where the env says so without the request's signal:
 * @hono/node-server's socket (reading `request.signal` there builds an AbortController a
 * request). Undefined under other servers: the request's signal says. Internal.
 */
export function _clientGoneOf(c: Context): boolean | undefined {
  const env = c.env as { incoming?: { socket?: { destroyed?: unknown } }; remoteAddr?: { hostname?: unknown; port?: unknown } } | undefined;
  const destroyed = env?.incoming?.socket?.destroyed;
  if (typeof destroyed === "boolean") return destroyed;
  // Deno.serve's info reports 0.0.0.0:0 for a client that reset its connection (a Unix socket's
  // peer has no hostname). On node:http and Bun.serve no address is no sign: a Unix-socket
  // listener has none either.
  const remote = env?.remoteAddr;
  return remote != null && _resetRemote(remote) ? true : undefined;
}

/**
 * The client leaving as an event, where the env has a cheaper one than the request's signal:
 * @hono/node-server's response, which closes when its connection does. Undefined under other
 * servers: the request's signal says. Internal.
 */
export function _clientLeftOf(c: Context): AbortSignalLike | undefined {
  const env = c.env as { incoming?: { socket?: { destroyed?: unknown } | null }; outgoing?: { on?: unknown; off?: unknown } } | undefined;
  const outgoing = env?.outgoing;
  if (env?.incoming === undefined || typeof outgoing?.on !== "function" || typeof outgoing.off !== "function") return undefined;
  return new _ClientLeft(env.incoming, outgoing as ConstructorParameters<typeof _ClientLeft>[1]);
}

/** The context, or a clear error saying how to get one. */
export function _requireContext(c: Context, middleware: string): RequestContext {
  const ctx = hygieneContext(c);
  if (ctx === undefined) {
    throw new TypeError(
      `Cannot run ${middleware}() as the request has no serve-hygiene context: serve the app with serve-hygiene's serve(), or add hygiene() before it`,
    );
  }
  return ctx;
}
