import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import type { DenyEvent } from "../../src/core/events.ts";
import { parsePromText, valueOf } from "../support/prom_text.ts";
import { probeNewConnection, rawConnect } from "../support/raw_http.ts";
import { runtime } from "../support/runtime.ts";

// The connection cap needs a connection hook: only node:http has one (Bun.serve and
// Deno.serve expose none; see the README's capability table). The node adapter is meant
// for Node, so this runs under Node only.
const onNode = runtime === "node";

describe(`node adapter connections (${runtime})`, () => {
  test(`node adapter: a client over maxConnections (every connection busy) gets an HTTP 503 with Retry-After, not a reset; a freed place admits the next${onNode ? "" : ` (skipped on ${runtime}: the connection cap exists only on node:http)`}`, { skip: !onNode, timeout: 15_000 }, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started = 0;
    const handle = await serve(async (request) => {
      if (new URL(request.url).pathname === "/hold") {
        started++;
        await held;
      }
      return new Response("ok");
    }, { port: 0, maxConnections: 2, log: () => {}, loadMonitor: false });
    const open: { destroy(): void }[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const conn = await rawConnect(handle.address.port);
        conn.write("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
        open.push(conn);
      }
      while (started < 2) await new Promise((r) => setTimeout(r, 5));
      const third = await rawConnect(handle.address.port);
      open.push(third);
      third.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      const res = await third.response();
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(res.headers.get("connection"), "close");
      open.shift()!.destroy();
      while ((handle.server.connectionCount?.() ?? 2) >= 2) await new Promise((r) => setTimeout(r, 5));
      const again = await rawConnect(handle.address.port);
      open.push(again);
      again.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await again.response()).status, 200, "a freed slot admits the next connection");
    } finally {
      release();
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });
});

/** A client socket that keeps its own side open after the server's FIN (allowHalfOpen), so a
 * server that only half-closed would still read what it writes next. */
function halfOpenClient(port: number): Promise<{
  write(data: string): void;
  received(): string;
  ended: Promise<void>;
  closed: Promise<void>;
  destroy(): void;
}> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, allowHalfOpen: true });
    let got = "";
    const ended = new Promise<void>((r) => socket.once("end", r));
    const closed = new Promise<void>((r) => socket.once("close", () => r()));
    socket.on("data", (chunk: Buffer) => (got += chunk.toString("latin1")));
    socket.once("error", reject);
    socket.once("connect", () => {
      socket.off("error", reject);
      socket.on("error", () => {}); // a reset after the server destroyed its end shows up as `closed`
      resolve({ write: (d) => void socket.write(d), received: () => got, ended, closed, destroy: () => socket.destroy() });
    });
  });
}

/** Rejects when `promise` has not settled within `ms`. */
const within = <T>(promise: Promise<T>, what: string, ms = 5000): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
};

const until = async (check: () => boolean, what: string, ms = 5000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe(`node adapter connection gate (${runtime})`, () => {
  const skip = { skip: !onNode, timeout: 15_000 };
  const why = onNode ? "" : ` (skipped on ${runtime}: the connection cap exists only on node:http)`;

  test(`node adapter: over maxConnections the handler never runs, the socket is closed (not half-open) and onDeny and the denials counter see layer "connection"${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const { createPrometheusExporter } = await import("../../src/prometheus/mod.ts");
    const metrics = createPrometheusExporter();
    const denies: DenyEvent[] = [];
    const paths: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const handle = await serve(async (request) => {
      const path = new URL(request.url).pathname;
      paths.push(path);
      if (path === "/hold") await held;
      return new Response("ok");
    }, { port: 0, maxConnections: 2, log: () => {}, loadMonitor: false, onDeny: (e) => denies.push(e), onEvent: metrics.onEvent });
    const open: { destroy(): void }[] = [];
    try {
      // Two connections busy in a request: nothing idle to give way.
      for (let i = 0; i < 2; i++) {
        const conn = await rawConnect(handle.address.port);
        open.push(conn);
        conn.write("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
      }
      await until(() => paths.length === 2, "both held requests in their handlers");
      const third = await halfOpenClient(handle.address.port);
      open.push(third);
      third.write("GET /over HTTP/1.1\r\nHost: x\r\n\r\n");
      await within(third.ended, "the server ending the refused connection");
      assert.match(third.received(), /^HTTP\/1\.1 503 .*\r\nretry-after: 1\r\n/is);
      // A half-closed server would read and run this one too.
      third.write("GET /again HTTP/1.1\r\nHost: x\r\n\r\n");
      await within(third.closed, "the refused connection closed, not half-open");
      release();
      await until(() => denies.length === 1, "the deny event");
      assert.deepEqual(paths, ["/hold", "/hold"], "a handler ran for the refused connection");
      assert.deepEqual({ layer: denies[0]!.layer, reason: denies[0]!.reason, status: denies[0]!.status }, { layer: "connection", reason: "over-cap", status: 503 });
      const text = parsePromText(await metrics.render());
      assert.equal(valueOf(text, "serve_hygiene_denials_total", { layer: "connection", reason: "over-cap" }), 1);
    } finally {
      release();
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });

  test(`node adapter: with maxConnections filled by silent sockets a new client is served, the oldest silent socket closed first${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const denies: DenyEvent[] = [];
    const handle = await serve(() => new Response("ok"), { port: 0, maxConnections: 2, log: () => {}, loadMonitor: false, onDeny: (e) => denies.push(e) });
    const open: { destroy(): void }[] = [];
    try {
      const silent1 = await rawConnect(handle.address.port);
      open.push(silent1);
      await until(() => handle.server.connectionCount?.() === 1, "the first silent socket counted");
      const silent2 = await rawConnect(handle.address.port);
      open.push(silent2);
      await until(() => handle.server.connectionCount?.() === 2, "the second silent socket counted");
      const client = await rawConnect(handle.address.port);
      open.push(client);
      client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await client.response()).status, 200, "the new client is served");
      await within(silent1.closed, "the oldest silent socket closed");
      assert.equal(silent2.isClosed(), false, "the newer silent socket was closed before the oldest");
      // The served client is now idle between requests (keep-alive): the next newcomer takes
      // the place of the oldest idle one, the remaining silent socket.
      const next = await rawConnect(handle.address.port);
      open.push(next);
      next.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await next.response()).status, 200);
      await within(silent2.closed, "the remaining silent socket closed");
      assert.equal(client.isClosed(), false);
      assert.deepEqual(denies, [], "no connection was refused");
    } finally {
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });

  test(`node adapter: an answer still in flight when accepting stops says Connection: close${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started = false;
    const handle = await serve(async () => ((started = true), await held, new Response("ok")), { port: 0, log: () => {}, loadMonitor: false });
    const conn = await rawConnect(handle.address.port);
    try {
      conn.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"); // keep-alive by default
      await until(() => started, "the request running");
      const finished = handle.shutdown("test over");
      // No pre-stop delay: accepting stops at once; a new connection is refused from then on.
      while ((await probeNewConnection(handle.address.port)).kind !== "refused") await new Promise((r) => setTimeout(r, 5));
      release();
      const res = await conn.response();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("connection"), "close", "the client learns the connection ends with this answer");
      assert.equal((await finished).outcome, "clean");
    } finally {
      release();
      conn.destroy();
    }
  });

  test(`node adapter: headersTimeoutMs and keepAliveTimeoutMs are validated as every other duration (0 would turn node's header deadline off)${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    for (const [field, value] of [["headersTimeoutMs", 0], ["headersTimeoutMs", Number.NaN], ["keepAliveTimeoutMs", -1], ["keepAliveTimeoutMs", 2 ** 31], ["writeStallTimeoutMs", 0], ["writeStallTimeoutMs", -5]] as const) {
      await assert.rejects(serve(() => new Response("ok"), { port: 0, log: () => {}, [field]: value }), {
        name: "RangeError",
        message: new RegExp(`^Cannot serve on node as "${field}" must be`),
      }, `${field}: ${value}`);
    }
  });

  // A review: node arms its idle keep-alive timer 1 s past keepAliveTimeout, so the largest
  // accepted value printed a TimeoutOverflowWarning on every keep-alive answer.
  test(`node adapter: keepAliveTimeoutMs at its largest (2^31 - 1) warns of no timer overflow, and keeps the connection${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const warnings: string[] = [];
    const onWarning = (w: Error) => void (w.name === "TimeoutOverflowWarning" && warnings.push(w.message));
    process.on("warning", onWarning);
    const handle = await serve(() => new Response("ok"), { port: 0, log: () => {}, loadMonitor: false, keepAliveTimeoutMs: 2 ** 31 - 1 });
    try {
      const conn = await rawConnect(handle.address.port);
      try {
        for (let i = 0; i < 3; i++) {
          conn.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
          assert.equal((await conn.response()).status, 200);
        }
        assert.equal(conn.isClosed(), false);
      } finally {
        conn.destroy();
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // warnings are emitted on the next tick
      assert.deepEqual(warnings, []);
    } finally {
      process.off("warning", onWarning);
      await handle.shutdown();
    }
  });

  test(`node adapter: clients that stopped reading a large answer do not hold the connection cap: past writeStallTimeoutMs their connections close and a newcomer is served; a stream with nothing to send is not cut${why}`, { ...skip, timeout: 30_000 }, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const big = new Uint8Array(16 * 1024 * 1024).fill(120); // far past the loopback socket buffers
    // Long against the slow reader's 60 ms pace, so a slow machine's pause does not read as a stall.
    const STALL_MS = 2000;
    const handle = await serve(async (request) => {
      const path = new URL(request.url).pathname;
      if (path === "/big") return new Response(big);
      if (path === "/quiet") {
        // One event, then nothing to send for longer than the stall bound, then the end.
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("data: 1\n\n"));
            setTimeout(() => (controller.enqueue(new TextEncoder().encode("data: end\n\n")), controller.close()), STALL_MS + 500);
          },
        });
        return new Response(stream, { headers: { "content-type": "text/event-stream" } });
      }
      return new Response("ok");
    }, { port: 0, maxConnections: 4, writeStallTimeoutMs: STALL_MS, log: (r) => void (r.msg === "closed connections whose clients stopped reading" && (cut += r.connections as number)), loadMonitor: false });
    let cut = 0;
    const sockets: Socket[] = [];
    try {
      // The quiet stream's client reads everything; two clients ask for /big and never read.
      const quiet = connect(handle.address.port, "127.0.0.1");
      sockets.push(quiet);
      let streamed = "";
      const quietEnded = new Promise<void>((resolve) => quiet.on("data", (d) => (streamed += d)).on("close", () => resolve()));
      quiet.write("GET /quiet HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      // A slow reader: it takes the answer a little at a time, in bursts well inside the bound.
      const slow = connect(handle.address.port, "127.0.0.1");
      sockets.push(slow);
      let slowRead = 0;
      const slowEnded = new Promise<void>((resolve) => slow.on("data", (d) => (slowRead += d.length)).on("end", () => resolve()));
      slow.write("GET /big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      slow.pause();
      const pacing = setInterval(() => (slow.resume(), setTimeout(() => slow.pause(), 2)), 60);
      for (let i = 0; i < 2; i++) {
        const s = connect(handle.address.port, "127.0.0.1");
        s.pause(); // reads nothing (so it would not see the close either)
        s.on("error", () => {});
        sockets.push(s);
        s.write("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
      }
      while (handle.server.connectionCount!() < 4) await new Promise((r) => setTimeout(r, 5));
      // The server closes the stalled connections (their clients read nothing)...
      for (let waited = 0; cut < 2; waited += 20) {
        assert.ok(waited < 15_000, `stalled connections closed: ${cut} of 2`);
        await new Promise((r) => setTimeout(r, 20));
      }
      // ...and only those: resumed, each reads what the kernel held of its answer, then the reset.
      for (const s of sockets.slice(2)) {
        let read = 0;
        await new Promise<void>((resolve) => s.on("data", (d) => (read += d.length)).on("close", () => resolve()).resume());
        assert.ok(read < big.length, `a stalled client read ${read} bytes before its connection ended`);
      }
      // ...so the cap has room: a newcomer is served.
      assert.equal((await fetch(`http://127.0.0.1:${handle.address.port}/`)).status, 200);
      // The quiet stream was idle past the bound with nothing to send: it ran to its end.
      await quietEnded;
      assert.match(streamed, /data: 1\n\n[\s\S]*data: end/);
      // The slow reader kept taking bytes: it got the whole answer.
      await slowEnded;
      clearInterval(pacing);
      assert.ok(slowRead > big.length, `the slow reader read ${slowRead} bytes`);
    } finally {
      for (const s of sockets) s.destroy();
      await handle.shutdown("test done");
    }
  });

  test(`node adapter: the connection cap's 503 has the head every other 503 has${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const handle = await serve(async () => (await held, new Response("ok")), { port: 0, maxConnections: 1, log: () => {}, loadMonitor: false });
    const open: { destroy(): void }[] = [];
    try {
      const busy = await rawConnect(handle.address.port);
      open.push(busy);
      busy.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      await until(() => handle.guard.inFlight === 1, "the first request running");
      const refused = await rawConnect(handle.address.port);
      open.push(refused);
      const res = await refused.response();
      assert.equal(res.status, 503);
      assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.headers.get("retry-after"), "1");
      assert.equal(res.headers.get("connection"), "close");
      assert.equal(res.body, "Service Unavailable");
    } finally {
      release();
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });

  test(`node adapter: a keep-alive connection idle between requests gives way to a new one at the cap${why}`, skip, async () => {
    const { serve } = await import("../../src/adapters/node/mod.ts");
    const handle = await serve(() => new Response("ok"), { port: 0, maxConnections: 1, log: () => {}, loadMonitor: false });
    const open: { destroy(): void }[] = [];
    try {
      const first = await rawConnect(handle.address.port);
      open.push(first);
      first.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await first.response()).status, 200);
      const second = await rawConnect(handle.address.port);
      open.push(second);
      second.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      assert.equal((await second.response()).status, 200);
      await within(first.closed, "the idle keep-alive connection closed");
    } finally {
      for (const c of open) c.destroy();
      await handle.shutdown();
    }
  });
});
