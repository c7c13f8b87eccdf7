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

/**
 * The part of a node-redis cluster client (`createCluster()` of the `redis` package, v5 or v6)
 * the binding uses: keyed sends, and a client for each master.
 */
export interface NodeRedisClusterLike {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  readonly masters: readonly unknown[];
  nodeClient(node: never): NodeRedisLike | Promise<NodeRedisLike>;
}

/** The part of Bun's built-in client (`new Bun.RedisClient(url)`, or `redis` from "bun") the binding uses. */
export interface BunRedisLike {
  send(command: string, args: string[]): Promise<unknown>;
  /** Bun's: whether the client is connected. With `connect`, lets the binding reconnect a client that gave up. */
  readonly connected?: boolean;
  /** Bun's: (re)connects. */
  connect?(): Promise<unknown>;
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
  // A cluster client's sendCommand takes (firstKey, isReadonly, args): bound here, every call
  // would fail (the store in fallback for good), where binding it is the mistake.
  if (typeof (client as { nodeClient?: unknown }).nodeClient === "function") {
    throw new TypeError(`Cannot bind node-redis as "client" is a cluster client (createCluster()): bind it with fromNodeRedisCluster`);
  }
  return { sendCommand: (args) => client.sendCommand(args) };
}

/**
 * Binds a node-redis cluster client (`createCluster()` of the `redis` package), connected and
 * configured as for {@linkcode fromNodeRedis}. A check runs on the master of its key's slot;
 * the scripts are loaded on every master (a NOSCRIPT after a failover or a resharding loads
 * them again). A scoped call (`rateLimits` with several shared rules) charges several keys in
 * one script, which a cluster runs only when they share a slot: give the store of such limiters
 * a prefix with a hash tag (`"{hygiene}:"`), which puts all its keys on one master — keep it
 * apart from the store of single-rule limiters, whose keys then spread over the masters.
 *
 * @example
 * ```ts
 * import { fromNodeRedisCluster } from "serve-hygiene/redis";
 * // const cluster = createCluster({ rootNodes: [{ url }], defaults: { disableOfflineQueue: true } }).on("error", log);
 * // await cluster.connect();
 * const node = { sendCommand: async (args: string[]) => (args[0] === "SCRIPT" ? "sha" : null) };
 * const cluster = { masters: [{}], nodeClient: () => node, sendCommand: async (_key: string | undefined, _ro: boolean | undefined, args: string[]) => args[0] };
 * console.assert((await fromNodeRedisCluster(cluster).sendCommand(["EVALSHA", "sha", "1", "k"])) === "EVALSHA");
 * ```
 */
export function fromNodeRedisCluster(cluster: NodeRedisClusterLike): RedisCommandClient {
  _need("bind a node-redis cluster", cluster, "sendCommand");
  _need("bind a node-redis cluster", cluster, "nodeClient");
  return {
    sendCommand: async (args) => {
      // SCRIPT LOAD: a key's EVALSHA runs on its slot's master, so every master needs the script.
      if (args[0] === "SCRIPT") {
        const masters = cluster.masters;
        if (masters.length === 0) throw new Error("the cluster has no master to load the script on (not connected?)");
        const replies = await Promise.all(masters.map(async (node) => (await cluster.nodeClient(node as never)).sendCommand(args)));
        return replies[0];
      }
      // EVALSHA <sha> <numkeys> <first key> ...: routed by its first key.
      return await cluster.sendCommand(args[0] === "EVALSHA" ? args[3] : undefined, false, args);
    },
  };
}

/**
 * Binds Bun's built-in Redis client (`Bun.RedisClient`; Bun only). Give it
 * `enableOfflineQueue: false` so a call made while Redis is down fails at once. A client that
 * gave up reconnecting (a long outage, a failed authentication) is reconnected by the next
 * call that fails.
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
  // Bun's client stops reconnecting for good after an outage longer than its retries (~31 s)
  // or a failed authentication (a rotated password), and says to call connect(): a store
  // left in fallback for the life of the process, every probe failing (a review). A call that
  // fails while it is not connected starts one connect() (one at a time; its failure is the
  // next call's): the store's probes then bring it back.
  let reconnecting = false;
  const reconnect = () => {
    if (reconnecting || client.connected !== false || typeof client.connect !== "function") return;
    reconnecting = true;
    let attempt: Promise<unknown>;
    try {
      attempt = Promise.resolve(client.connect());
    } catch (error) {
      attempt = Promise.reject(error);
    }
    attempt.catch(() => {}).finally(() => (reconnecting = false));
  };
  return {
    sendCommand: (args) =>
      client.send(args[0]!, args.slice(1)).catch((error: unknown) => {
        reconnect();
        throw error;
      }),
  };
}
