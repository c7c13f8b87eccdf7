import { _durationMs, type _KeyList, _safeLogger, type GuardedHandler, type ServeHandle, type ServeOptions, serveWith } from "../../core/mod.ts";
import { createNodeHost, type NodeHostOptions } from "./host.ts";
import { listenNode } from "./server.ts";

/** Options of the node adapter's {@linkcode serve}. */
export interface NodeServeOptions extends ServeOptions, NodeHostOptions {
  /** Headers must arrive within this; node answers 408 otherwise. @default min(10000, requestTimeoutMs) */
  headersTimeoutMs?: number | undefined;
  /** Idle keep-alive sockets close after this (node adds 1 s; at most 2^31 - 1001 ms are used). @default 5000 */
  keepAliveTimeoutMs?: number | undefined;
  /**
   * A connection whose response has bytes waiting to be sent, and that has sent none of them
   * for this long (a client that stopped reading), is closed, so it cannot hold the connection
   * cap. A stream with nothing to send is not cut. Progress is seen in the kernel's grain: it
   * takes more once about a third of the socket's send buffer is free (up to ~1.3 MiB), so a
   * reader slower than that per this bound is cut too (at 60 s, under ~22 KB/s for a large
   * answer) — as nginx's `send_timeout` (60 s), with the same grain. Bun's idle timeout does
   * the like there (10 s); Deno has no connection cap. `Infinity`: never. @default 60000
   */
  writeStallTimeoutMs?: number | undefined;
}

/** The Node adapter's own options (serve() checks every key given: see ServeOptions). */
const NODE_KEYS = Object.keys({ headersTimeoutMs: true, keepAliveTimeoutMs: true, writeStallTimeoutMs: true } satisfies _KeyList<Omit<NodeServeOptions, keyof ServeOptions>>);

/**
 * Serves a Web fetch handler (a Hono app's `fetch`, say) on node:http behind the guard,
 * with SIGTERM/Ctrl-C wired to the two-phase drain. It translates through @hono/node-server
 * and, like that package's own `serve()`, installs its compatible `Request`/`Response` as the
 * globals when it starts (importing this module changes nothing).
 *
 * @example
 * ```ts
 * import { serve } from "serve-hygiene/node";
 * const handle = await serve(() => new Response("hello"), { port: 0, concurrencyLimit: 256 });
 * const res = await fetch(`http://127.0.0.1:${handle.address.port}/`);
 * console.assert(res.status === 200 && (await res.text()) === "hello");
 * await handle.shutdown("example done");
 * ```
 */
export async function serve(handler: GuardedHandler, options: NodeServeOptions = {}): Promise<ServeHandle> {
  // async: a bad option rejects the promise it returns, as every other failure does (a throw
  // escaped `serve(…).catch(…)`: a review).
  // node:http takes 0 as "off" (a half-sent head would hold its connection for ever) and says
  // nothing of a value past the longest timer: both are refused here, as every other duration.
  if (options.headersTimeoutMs !== undefined) _durationMs("serve on node", "headersTimeoutMs", options.headersTimeoutMs);
  if (options.keepAliveTimeoutMs !== undefined) _durationMs("serve on node", "keepAliveTimeoutMs", options.keepAliveTimeoutMs);
  if (options.writeStallTimeoutMs !== undefined) _durationMs("serve on node", "writeStallTimeoutMs", options.writeStallTimeoutMs, { infinity: true });
  const host = createNodeHost(options);
  const log = _safeLogger(options.log ?? host.log!);
  const listen = listenNode({ headersTimeoutMs: options.headersTimeoutMs, keepAliveTimeoutMs: options.keepAliveTimeoutMs, writeStallTimeoutMs: options.writeStallTimeoutMs, log });
  return serveWith(host, Object.assign(listen, { optionKeys: NODE_KEYS, countsConnections: true }), handler, options);
}
