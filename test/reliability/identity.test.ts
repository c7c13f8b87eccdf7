// Reliability: keys and identity. A flood of distinct client keys must not grow any table past
// its cap nor the heap past a small ceiling, and must not evict a hot key's window (that would
// reset an abuser's count). Spoofed X-Forwarded-For must not buy a fresh bucket; a trusted
// proxy's chain is read from the right; an IPv6 client rotating inside its /64 stays in one
// bucket. The flood runs in-process (time passed in, no sleeping); the proxy cases also run
// over real loopback HTTP, using 127.0.0.2 as a second source address on the loopback.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import { collectGarbage, heapUsedBytes } from "../support/memory.ts";
import { openSock, type Running, startServer } from "../support/reliability.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import { createInFlightLimiter } from "../../src/core/limits/inflight_limit.ts";
import { createGuard } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";

const KEYS = 1_000_000;
const MAX_KEYS = 4096;
// Measured with a forced collection before and after (node 20, deno 2.9, bun 1.4): under
// 1 MB of growth for every limiter below (README: +0.56 to +0.67 MB). A table that kept every
// key would grow by 100 MB or more; 16 MB leaves room for allocator noise on any runtime.
const HEAP_CEILING_BYTES = 16 * 1024 * 1024;
const LONG = { timeout: 60_000 };

/** Live heap after full collections; every runtime here lets a test force one (support/memory.ts). */
function settledHeap(): number {
  assert.ok(collectGarbage(), "no way to force a collection on this runtime");
  collectGarbage();
  return heapUsedBytes();
}

/** A distinct IPv4-looking key per index, as a real flood of spoofed sources would bring. */
const ipKey = (i: number) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

describe(`reliability (${runtime}): keys and identity`, () => {
  test(`reliability (${runtime}): 1,000,000 distinct keys through a fixed window (cap ${MAX_KEYS}) → the table never passes its cap, heap growth under 16 MB, the hot key's window intact`, LONG, () => {
    // limit 100 per 60 s window; one key every 0.1 ms, so the flood spans 100 s: the first
    // windows end mid-flood and the table is pruned and refilled, never grown.
    const limiter = createFixedWindowLimiter({ limit: 100, windowMs: 60_000, maxKeys: MAX_KEYS });
    const before = settledHeap();
    let maxSize = 0;
    let hotAllowed = 0;
    let hotWindows = 0;
    let hotWindowStart = -Infinity;
    for (let i = 0; i < KEYS; i++) {
      const now = i * 0.1;
      limiter.take(ipKey(i), 1, now);
      const size = limiter.size.value;
      if (size > maxSize) maxSize = size;
      // The hot key asks every 100 keys (10,000 times in all), far more than its limit.
      if (i % 100 === 0) {
        if (now >= hotWindowStart + 60_000) {
          hotWindowStart = now;
          hotWindows++;
        }
        if (limiter.take("hot", 1, now).allowed) hotAllowed++;
      }
    }
    const growth = settledHeap() - before;
    assert.equal(maxSize, MAX_KEYS, "the table never reached, or passed, its cap");
    assert.ok(limiter.size.value <= MAX_KEYS);
    // Exactly `limit` per window the hot key opened: an eviction would have reset its count
    // and let it through again inside the same window.
    assert.equal(hotWindows, 2);
    assert.equal(hotAllowed, 100 * hotWindows);
    assert.ok(growth < HEAP_CEILING_BYTES, `heap grew by ${(growth / 1e6).toFixed(2)} MB`);
  });

  test(`reliability (${runtime}): 1,000,000 distinct keys through a token bucket (cap ${MAX_KEYS}) → the table never passes its cap, heap growth under 16 MB, the hot key's bucket intact`, LONG, () => {
    // One token per 100 s, burst 100: no bucket refills during the 50 s flood, so every unseen
    // key past the cap is refused as table-full or charged to its /24's shared bucket (at most
    // maxKeys / 4 networks, 100 each), and the hot key may pass exactly 100 times.
    const limiter = createTokenBucketLimiter({ ratePerSecond: 0.01, burst: 100, maxKeys: MAX_KEYS });
    const before = settledHeap();
    let maxSize = 0;
    let hotAllowed = 0;
    let tableFull = 0;
    for (let i = 0; i < KEYS; i++) {
      const now = i * 0.05;
      if (limiter.take(ipKey(i), 1, now).reason === "table-full") tableFull++;
      const size = limiter.size.value;
      if (size > maxSize) maxSize = size;
      if (i % 100 === 0 && limiter.take("hot", 1, now).allowed) hotAllowed++;
    }
    const growth = settledHeap() - before;
    assert.equal(maxSize, MAX_KEYS);
    const pooledMost = (MAX_KEYS / 4) * 100;
    assert.ok(tableFull >= KEYS - (MAX_KEYS - 1) - pooledMost, "past the cap (the hot key holds one slot) only the networks' shared buckets admit");
    assert.ok(tableFull < KEYS - (MAX_KEYS - 1), "under pressure unseen addresses are charged to their network, not all refused");
    assert.equal(hotAllowed, 100);
    assert.ok(growth < HEAP_CEILING_BYTES, `heap grew by ${(growth / 1e6).toFixed(2)} MB`);
  });

  test(`reliability (${runtime}): 1,000,000 distinct keys through the per-key in-flight limiter (cap ${MAX_KEYS}) → idle keys swept, heap growth under 16 MB, a busy key's count intact`, LONG, () => {
    const limiter = createInFlightLimiter({ perKey: 2, maxKeys: MAX_KEYS });
    const busy = [limiter.tryAcquire("busy"), limiter.tryAcquire("busy")];
    assert.ok(busy.every((s) => s.ok));
    const before = settledHeap();
    let maxSize = 0;
    let refused = 0;
    for (let i = 0; i < KEYS; i++) {
      const slot = limiter.tryAcquire(ipKey(i));
      if (!slot.ok) refused++;
      const size = limiter.size.value;
      if (size > maxSize) maxSize = size;
      if (slot.ok) slot.release();
    }
    const growth = settledHeap() - before;
    assert.equal(refused, 0, "a free client was refused");
    assert.equal(maxSize, 2, "only the busy key and the one being served are ever active");
    assert.equal(limiter.inFlight("busy"), 2);
    const third = limiter.tryAcquire("busy");
    assert.ok(!third.ok && third.reason === "peer-busy", "the busy key's count was reset by the flood");
    for (const s of busy) if (s.ok) s.release();
    assert.equal(limiter.size.value, 0);
    assert.ok(growth < HEAP_CEILING_BYTES, `heap grew by ${(growth / 1e6).toFixed(2)} MB`);
  });

  // In-process through the guard: the peer address is what the adapter would pass.
  const guarded = (clientKey?: { trustedProxies: string[] }) => {
    const clock = createManualClock();
    const guard = createGuard({
      clock,
      loadMonitor: false,
      rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 3, windowMs: 60_000, clock, name: "ip" }) }],
      ...(clientKey === undefined ? {} : { clientKey }),
    });
    const fetch = guard.wrap((_req, { context }) => new Response(context.key));
    return async (address: string, xff?: string) => {
      const headers = xff === undefined ? undefined : { "x-forwarded-for": xff };
      const res = await fetch(new Request("http://localhost/", headers === undefined ? {} : { headers }), { peer: { address } });
      return `${res.status}:${res.status === 200 ? await res.text() : ""}`;
    };
  };

  test(`reliability (${runtime}): X-Forwarded-For from an untrusted peer is ignored: a spoofer sending a new address each time shares its socket address's bucket`, async () => {
    const send = guarded({ trustedProxies: ["10.0.0.0/8"] });
    const statuses = [];
    for (const fake of ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4", "5.5.5.5, 10.0.0.1"]) statuses.push(await send("198.51.100.7", fake));
    assert.deepEqual(statuses, ["200:198.51.100.7", "200:198.51.100.7", "200:198.51.100.7", "429:", "429:"]);
    assert.equal(await send("198.51.100.7"), "429:", "the plain request from the same socket address shares the bucket");
    assert.equal(await send("198.51.100.8", "198.51.100.7"), "200:198.51.100.8", "another peer is not charged by naming it");
  });

  test(`reliability (${runtime}): X-Forwarded-For from a trusted proxy is honoured from the right: trusted hops skipped, the spoofable left part ignored`, async () => {
    const send = guarded({ trustedProxies: ["10.0.0.0/8"] });
    assert.equal(await send("10.0.0.2", "203.0.113.9"), "200:203.0.113.9");
    assert.equal(await send("10.0.0.2", "203.0.113.9, 10.1.2.3"), "200:203.0.113.9", "trusted hop skipped");
    assert.equal(await send("10.0.0.2", "6.6.6.6, 198.51.100.1, 10.1.2.3"), "200:198.51.100.1", "the rightmost untrusted entry wins");
    assert.equal(await send("10.0.0.2", "garbage, 10.1.2.3"), "200:id:garbage", "a malformed client entry is the client, not the proxy");
    assert.equal(await send("10.0.0.2", "203.0.113.9,"), "200:unknown", "a trailing comma: the client is unknown, not the proxy");
    // The client behind the proxy has its own bucket, whatever it writes on the left.
    const statuses = [];
    for (const fake of ["7.7.7.7", "8.8.8.8", "9.9.9.9"]) statuses.push(await send("10.0.0.2", `${fake}, 203.0.113.9`));
    assert.deepEqual(statuses, ["200:203.0.113.9", "429:", "429:"]);
  });

  test(`reliability (${runtime}): addresses rotating inside one IPv6 /64 share one bucket; the next /64 does not; IPv4-mapped IPv6 is its IPv4`, async () => {
    const send = guarded();
    const statuses = [];
    for (let i = 0; i < 50; i++) {
      const iid = [0, 1, 2, 3].map(() => Math.floor(Math.random() * 0x10000).toString(16)).join(":");
      statuses.push(await send(`2001:db8:abcd:12:${iid}`));
    }
    assert.deepEqual(statuses.slice(0, 3), Array(3).fill("200:2001:db8:abcd:12::/64"));
    assert.deepEqual(statuses.slice(3), Array(47).fill("429:"));
    assert.equal(await send("2001:db8:abcd:13::1"), "200:2001:db8:abcd:13::/64");
    assert.equal(await send("::ffff:192.0.2.1"), "200:192.0.2.1");
    assert.equal(await send("192.0.2.1"), "200:192.0.2.1");
    assert.equal(await send("::ffff:c000:201"), "200:192.0.2.1");
    assert.equal(await send("192.0.2.1"), "429:");
  });

  describe(`reliability (${runtime}): identity over real HTTP (trusted proxy 127.0.0.2, 3 requests per key)`, () => {
    let shared: Promise<Running> | undefined;
    const server = () => (shared ??= startServer({ TRUSTED_PROXIES: "127.0.0.2/32", RATE_LIMIT: "3" }));
    after(async () => (await shared?.catch(() => undefined))?.child.kill());

    /** GET /key from `from` (a loopback source address) with an optional X-Forwarded-For. */
    const key = async (port: number, from: string, xff?: string) => {
      const sock = await openSock(port, from);
      try {
        sock.write(`GET /key HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${xff === undefined ? "" : `X-Forwarded-For: ${xff}\r\n`}\r\n`);
        const res = await sock.response();
        return `${res.status}:${res.status === 200 ? res.body : ""}`;
      } finally {
        sock.destroy();
      }
    };

    test(`reliability (${runtime}): a spoofed X-Forwarded-For from an untrusted socket (127.0.0.1) is ignored and shares that socket's bucket`, LONG, async () => {
      const { port } = await server();
      const statuses = [];
      for (const fake of ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"]) statuses.push(await key(port, "127.0.0.1", fake));
      assert.deepEqual(statuses, ["200:127.0.0.1", "200:127.0.0.1", "200:127.0.0.1", "429:"]);
      assert.equal(await key(port, "127.0.0.1"), "429:");
    });

    test(`reliability (${runtime}): X-Forwarded-For through the trusted proxy (127.0.0.2) is honoured from the right`, LONG, async () => {
      const { port } = await server();
      assert.equal(await key(port, "127.0.0.2", "198.51.100.1, 127.0.0.2"), "200:198.51.100.1");
      assert.equal(await key(port, "127.0.0.2", "6.6.6.6, 198.51.100.1"), "200:198.51.100.1");
      assert.equal(await key(port, "127.0.0.2", "7.7.7.7, 198.51.100.1"), "200:198.51.100.1");
      assert.equal(await key(port, "127.0.0.2", "8.8.8.8, 198.51.100.1"), "429:", "the client behind the proxy spent its own bucket");
      assert.equal(await key(port, "127.0.0.2", "198.51.100.2"), "200:198.51.100.2", "its neighbour behind the same proxy did not");
      assert.equal(await key(port, "127.0.0.2"), "200:127.0.0.2", "no header: the proxy itself");
      assert.equal(await key(port, "127.0.0.2", "not-an-address"), "200:id:not-an-address", "garbage from the proxy: its own derived bucket");
      assert.equal(await key(port, "127.0.0.2", "198.51.100.3,"), "200:unknown", "a trailing comma: the unknown client, not the proxy's bucket");
    });
  });
});
