// The Redis part's HTTP server, on whichever runtime runs it:
//   <runtime> redis.ts local|shared        (shared reads HYGIENE_BENCH_REDIS_URL)
// serve() with part 1's "every gate on, none tripping" (allGates) but the load monitor, the per-IP fixed window
// either in memory ("local", as in part 1) or shared through Redis ("shared"; node-redis,
// one connection, the store's defaults but a generous timeout: the bench measures the
// round-trip, and a failed check would show as a non-2xx). The limit is out of reach.
import { createClient } from "redis";
import { createFixedWindowLimiter, type ServeHandle, type ServeOptions } from "../../../src/mod.ts";
import { createRedisStore, fromNodeRedis } from "../../../src/redis/mod.ts";
import { allGates, announce, args, helloHandler } from "./_shared.ts";

type Serve = (handler: (request: Request) => Response, options: ServeOptions) => Promise<ServeHandle>;
const argv = typeof Deno !== "undefined" ? Deno.args : process.argv.slice(2);
const { variant } = args(argv);
const serve: Serve = typeof Deno !== "undefined"
  ? (await import("../../../src/adapters/deno/mod.ts")).serve
  : "Bun" in globalThis
  ? (await import("../../../src/adapters/bun/mod.ts")).serve
  : (await import("../../../src/adapters/node/mod.ts")).serve;

// The load monitor off in both variants: on a machine shared with other work it trips on
// their load (part 1's servers showed load/busy refusals there), and it is not what differs.
const options: ServeOptions = { ...allGates(), loadMonitor: false };
if (variant === "shared") {
  const url = typeof Deno !== "undefined" ? Deno.env.get("HYGIENE_BENCH_REDIS_URL") : process.env.HYGIENE_BENCH_REDIS_URL;
  if (url === undefined) throw new Error("HYGIENE_BENCH_REDIS_URL is required for the shared variant");
  const client = createClient({ url, disableOfflineQueue: true });
  client.on("error", () => {});
  await client.connect();
  const store = createRedisStore({ client: fromNodeRedis(client), prefix: `bench:${Date.now()}:`, timeoutMs: 1_000 });
  options.rateLimits = [{ limiter: createFixedWindowLimiter({ name: "ip", limit: 1e12, windowMs: 60_000, store }), scope: "ip" }];
} else if (variant !== "local") throw new Error(`unknown variant ${variant}: local or shared`);

const handle = await serve(helloHandler, { ...options, port: 0, hostname: "127.0.0.1" });
announce(handle.address.port);
