import type { PeerAddress } from "./server.ts";

/**
 * One request's transport peer as the core reads it, from what a runtime reports: Node's
 * socket (`remoteAddress`, `remotePort`, `remoteFamily`), Bun's `requestIP` (`address`,
 * `port`, `family`), Deno's `remoteAddr` (`hostname`, `port`, no family). The family is the
 * runtime's where it says IPv4 or IPv6 (`"IPv4"`/`4`, `"IPv6"`/`6`), else derived from the
 * address: IPv6 text has a colon. An IPv4-mapped peer (`::ffff:a.b.c.d`) is left as the
 * transport wrote it; client keys unmap it.
 *
 * @example Each runtime's report, one mapping
 * ```ts
 * import { peerAddress } from "./peer_address.ts";
 * console.assert(peerAddress("127.0.0.1", 50123, "IPv4").family === "IPv4");
 * console.assert(peerAddress("::ffff:127.0.0.1", 50123, "IPv6").address === "::ffff:127.0.0.1");
 * console.assert(peerAddress("2001:db8::1", 443).family === "IPv6"); // no family given: derived
 * ```
 */
export function peerAddress(address: string, port?: number, family?: string | number): PeerAddress {
  return {
    address,
    port,
    family: family === "IPv6" || family === 6
      ? "IPv6"
      : family === "IPv4" || family === 4
      ? "IPv4"
      : address.includes(":")
      ? "IPv6"
      : "IPv4",
  };
}

/**
 * Whether Deno's `remoteAddr` is a reset connection's: the unspecified address (0.0.0.0, ::)
 * and port 0, what Deno reports for a client that reset its connection before the peer was
 * read. Internal.
 */
export function _resetRemote(remote: { readonly hostname?: unknown; readonly port?: unknown }): boolean {
  return remote.port === 0 && (remote.hostname === "0.0.0.0" || remote.hostname === "::");
}

/** A Node-shaped socket's peer fields (node:net's Socket, as @hono/node-server's env hands it over). */
export interface _PeerSocket {
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
  readonly remoteFamily?: string | undefined;
}

// The peer of each open connection, read once: a keep-alive connection carries many requests,
// and each read of a node socket's peer is three getters on a socket whose shape varies
// (megamorphic loads: ~0.3 µs a request in a profile of the refusal path) plus an object.
const _peers = new WeakMap<object, PeerAddress>();

/**
 * The transport peer of a Node-shaped socket, mapped by {@linkcode peerAddress} once per
 * socket (a connection's peer does not change). Undefined while the socket reports no address
 * (it closed before it was read); that is not kept. The peer is frozen: every request of the
 * connection gets the same object. Internal.
 */
export function _socketPeer(socket: _PeerSocket): PeerAddress | undefined {
  let peer = _peers.get(socket);
  if (peer !== undefined) return peer;
  const address = socket.remoteAddress;
  if (address === undefined) return undefined;
  // Frozen: one object serves every request of the connection.
  peer = Object.freeze(peerAddress(address, socket.remotePort, socket.remoteFamily));
  _peers.set(socket, peer);
  return peer;
}

/**
 * The transport peer of a request, read from what the server that runs it hands over beside it
 * (a fetch handler's second argument, Hono's `c.env`): serve-hygiene's adapters (`peer`), a
 * Bun server (`requestIP(request)`), Deno's handler info (`remoteAddr`), @hono/node-server
 * (`incoming.socket`). Reads the shape, never the runtime; undefined when none is there.
 * Internal.
 */
export function _envPeer(env: unknown, request: Request): PeerAddress | undefined {
  if (env === null || typeof env !== "object") return undefined;
  const e = env as Record<string, unknown>;
  const peer = e.peer as PeerAddress | undefined;
  if (peer?.address !== undefined) return peer;
  const requestIP = e.requestIP as ((r: Request) => PeerAddress | null) | undefined;
  if (typeof requestIP === "function") {
    // Bun's SocketAddress ({ address, family, port }) is a PeerAddress as it is: no copy a request.
    return requestIP.call(env, request) ?? undefined;
  }
  const remote = e.remoteAddr as { hostname?: string; port?: number } | undefined;
  if (typeof remote?.hostname === "string") return _resetRemote(remote) ? undefined : { address: remote.hostname, port: remote.port };
  const socket = (e.incoming as { socket?: _PeerSocket | null } | undefined)?.socket;
  return socket === undefined || socket === null ? undefined : _socketPeer(socket);
}

/**
 * What a wrapped fetch hands the guard beside its request: the runtime's own argument under
 * `deno serve` (its info's `remoteAddr`), Bun's `export default { fetch }` (the server's
 * `requestIP`) or @hono/node-server (`incoming`) becomes an info whose `peer` is read from it
 * when first asked (Bun's `requestIP` is a system call); anything else — a ServeInfo — is
 * passed as it is. A review: under those entry points every client's key was "unknown", one
 * budget for all. Internal.
 */
export function _servedInfo<I extends object>(info: I | undefined, request: Request): I | { readonly peer: PeerAddress | undefined } | undefined {
  if (info === undefined || info === null || typeof info !== "object" || "peer" in info) return info;
  const e = info as Record<string, unknown>;
  if (e.remoteAddr === undefined && typeof e.requestIP !== "function" && e.incoming === undefined) return info;
  return {
    get peer() {
      return _envPeer(info, request);
    },
  };
}
