// Probe: which Redis clients work as the shared store's injected `sendCommand(args)` on the
// runtime that runs this file, against a real redis-server started on a free port.
//
//   node --import tsx scripts/probes/redis_clients.ts
//   deno run -A scripts/probes/redis_clients.ts
//   bun run scripts/probes/redis_clients.ts          (also probes Bun's built-in RedisClient)
//
// For each client it prints one JSON line per fact: PING, SCRIPT LOAD + EVALSHA, what an
// EVALSHA of an unknown script rejects with (the NOSCRIPT path), 200 concurrent calls (how
// many reached Redis), what a call does while Redis is down (rejects at once, or waits for
// the reconnect), and whether the client reconnects once Redis is back. Exit 1 on a failure.
//
// Measured 2026-12-02 (node 20.20, deno 2.9.6, bun 1.4.5; redis-server 7.0.15; redis 6.3.1):
//   node-redis on node, deno and bun: every check passes. EVALSHA of an unknown script
//     rejects with "SimpleError: NOSCRIPT No matching script…"; 200 concurrent calls are 200
//     commands on one connection. With Redis down a call waits in the offline queue until
//     the reconnect (still pending after 300 ms) — unless `disableOfflineQueue: true`, which
//     rejects at once (ClientOfflineError; on Deno SocketClosedUnexpectedlyError). It
//     reconnects by itself.
//   Bun.RedisClient on bun: every check passes; NOSCRIPT rejects with "Error: NOSCRIPT …".
//     With Redis down a call waits (default `enableOfflineQueue: true`) or rejects at once
//     (`false`); it reconnects by itself.
// So a client's own waiting is unbounded by default: the store's own timeout is what bounds it.
import { startRedis } from "../../test/support/redis.ts";

const runtime = "Bun" in globalThis ? "bun" : "Deno" in globalThis ? "deno" : "node";
type Send = (args: string[]) => Promise<unknown>;

const report = (client: string, fact: string, value: unknown) => console.log(JSON.stringify({ runtime, client, fact, value }));
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What `p` did within `ms`: { resolved } / { rejected } / "still pending after ms". */
async function settleWithin(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<string>((r) => (timer = setTimeout(() => r(`still pending after ${ms} ms`), ms)));
  const settled = p.then((v) => ({ resolved: v }), (e: Error) => ({ rejected: `${e?.constructor?.name}: ${e?.message}` }));
  return await Promise.race([settled, late]).finally(() => clearTimeout(timer));
}

/** PINGs until it answers (the client reconnecting), up to 5 s. */
async function pingUntil(send: Send): Promise<unknown> {
  const end = Date.now() + 5_000;
  for (;;) {
    try {
      return await send(["PING"]);
    } catch (e) {
      if (Date.now() > end) throw e;
      await delay(50);
    }
  }
}

const redis = await startRedis();
let failures = 0;
const check = (client: string, fact: string, ok: boolean, value: unknown) => {
  if (!ok) failures++;
  report(client, fact, ok ? value : { FAILED: value });
};

async function probe(name: string, send: Send, close: () => unknown) {
  check(name, "PING", (await send(["PING"])) === "PONG", "PONG");
  const sha = String(await send(["SCRIPT", "LOAD", "return redis.call('INCR', KEYS[1])"]));
  const first = await send(["EVALSHA", sha, "1", `probe:${name}`]);
  check(name, "SCRIPT LOAD + EVALSHA", Number(first) === 1, first);
  const missing = await settleWithin(send(["EVALSHA", "0".repeat(40), "0"]), 2_000);
  check(name, "EVALSHA of an unknown script", JSON.stringify(missing).includes("NOSCRIPT"), missing);
  const before = (await redis.commandCalls()).incr ?? 0;
  const many = await Promise.all(Array.from({ length: 200 }, () => send(["INCR", `probe:many:${name}`])));
  const after = (await redis.commandCalls()).incr ?? 0;
  check(name, "200 concurrent calls", many.length === 200 && after - before === 200, { answered: many.length, reachedRedis: after - before });
  await redis.kill();
  report(name, "a call while Redis is down", await settleWithin(send(["PING"]), 300));
  await redis.restart();
  const back = await settleWithin(pingUntil(send), 6_000);
  check(name, "reconnects once Redis is back", JSON.stringify(back).includes("PONG"), back);
  await close();
}

try {
  const { createClient } = await import("redis");
  for (const offline of [false, true]) {
    const c = createClient({ url: redis.url, disableOfflineQueue: offline, socket: { reconnectStrategy: 50 } });
    c.on("error", () => {}); // reconnect noise while Redis is down
    await c.connect();
    await probe(`node-redis${offline ? " (disableOfflineQueue)" : ""}`, (args) => c.sendCommand(args), () => c.destroy());
  }
  if (runtime === "bun") {
    type BunRedis = { send(c: string, a: string[]): Promise<unknown>; connect(): Promise<void>; close(): void };
    const { RedisClient } = (globalThis as unknown as { Bun: { RedisClient: new (url: string, o?: object) => BunRedis } }).Bun;
    for (const offline of [true, false]) {
      const c = new RedisClient(redis.url, { autoReconnect: true, enableOfflineQueue: offline });
      await c.connect();
      await probe(`Bun.RedisClient${offline ? "" : " (enableOfflineQueue: false)"}`, ([cmd, ...rest]) => c.send(cmd!, rest), () => c.close());
    }
  }
} finally {
  await redis.stop();
}
console.log(JSON.stringify({ runtime, failures }));
process.exit(failures === 0 ? 0 : 1);
