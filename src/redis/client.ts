// The Redis client as the store sees it: one method that sends a command and resolves with
// its reply. node-redis and Bun's built-in client fit through a one-line binding each; the
// bindings only call the object they are given, so this module imports no client library
// (the `redis` peer dependency is optional).

/**
 * The one thing the Redis store needs of a client: send a command (its name and arguments
 * as strings) and resolve with the reply, or reject with the server's error. Replies are
 * read as RESP2 or RESP3 alike (arrays of bulk strings).
 */
export interface RedisCommandClient {
  sendCommand(args: string[]): Promise<unknown>;
}

/** The part of a node-redis client (`createClient()` of the `redis` package, v5 or v6) the binding uses. */
export interface NodeRedisLike {
  sendCommand(args: string[]): Promise<unknown>;
}

/** The part of Bun's built-in client (`new Bun.RedisClient(url)`, or `redis` from "bun") the binding uses. */
export interface BunRedisLike {
  send(command: string, args: string[]): Promise<unknown>;
}

function _need(what: string, client: unknown, method: string): void {
  if (typeof (client as Record<string, unknown> | null)?.[method] !== "function") {
    throw new TypeError(`Cannot ${what} as "client" must have a ${method}() method: current value is ${typeof client}`);
  }
}

/**
 * Binds a node-redis client (the `redis` package; it runs on Node, Deno and Bun). Connect it
 * yourself, and give it `disableOfflineQueue: true` so a call made while Redis is down fails
 * at once rather than waiting in the client's queue (the store's timeout bounds it anyway).
 * Give it an `error` listener too: without one node-redis throws a lost connection (Redis
 * restarting, failing over) out of the process, where the store would have answered the
 * calls by their failure mode.
 *
 * @example
 * ```ts
 * import { fromNodeRedis } from "serve-hygiene/redis";
 * // const client = createClient({ url, disableOfflineQueue: true }).on("error", log); // the listener is required: see fromNodeRedis
 * // await client.connect();
 * const client = { sendCommand: async (args: string[]) => (args[0] === "PING" ? "PONG" : null) };
 * console.assert((await fromNodeRedis(client).sendCommand(["PING"])) === "PONG");
 * ```
 */
export function fromNodeRedis(client: NodeRedisLike): RedisCommandClient {
  _need("bind node-redis", client, "sendCommand");
  return { sendCommand: (args) => client.sendCommand(args) };
}

/**
 * Binds Bun's built-in Redis client (`Bun.RedisClient`; Bun only). Give it
 * `enableOfflineQueue: false` so a call made while Redis is down fails at once.
 *
 * @example
 * ```ts
 * import { fromBunRedis } from "serve-hygiene/redis";
 * // const client = new Bun.RedisClient(url, { enableOfflineQueue: false });
 * const client = { send: async (command: string, _args: string[]) => (command === "PING" ? "PONG" : null) };
 * console.assert((await fromBunRedis(client).sendCommand(["PING"])) === "PONG");
 * ```
 */
export function fromBunRedis(client: BunRedisLike): RedisCommandClient {
  _need("bind Bun's Redis client", client, "send");
  return { sendCommand: (args) => client.send(args[0]!, args.slice(1)) };
}
