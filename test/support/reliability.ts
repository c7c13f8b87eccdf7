// Helpers of the reliability suite (test/reliability/): the fixture server as a child
// process, bounded waits, its JSON lines and its unguarded /__stats side door, and a raw
// loopback socket that records exactly what came back and how the connection ended.
import assert from "node:assert/strict";
import { connect, type Socket } from "node:net";
import { type Child, records, startChild } from "./runtime.ts";
import { type Parsed, parseResponse } from "./raw_http.ts";

export { type Parsed, parseResponse, records };

export const FIXTURE = "test/fixtures/reliability_server.ts";
/** Every wait in the suite is bounded by this unless it says otherwise. */
export const BOUND_MS = 15_000;

/** What /__stats reports, read from `handle.guard` outside the guard. */
export interface Stats {
  readonly inFlight: number;
  /** The concurrency limit now (it moves when adaptive). */
  readonly limit: number;
  readonly stragglers: number;
  readonly perKeyInFlight: number | null;
  readonly perKeySize: number | null;
  readonly loadBusy: boolean | null;
  /** The load monitor's admitted share (1 when normal), or null without one. */
  readonly admitShare: number | null;
  readonly memoryShedding: boolean | null;
  readonly rss: number | null;
  readonly live: number | null;
  readonly estimate: number | null;
  readonly ceiling: number | null;
}

export interface Running {
  readonly child: Child;
  readonly port: number;
  readonly url: (path: string) => string;
  /** The guard's live state; never refused, never counted in flight. */
  stats(key?: string): Promise<Stats>;
  /** Drops what /alloc hoarded and forces a collection (unless `collect` is false). */
  free(collect?: boolean): Promise<{ collected: boolean; rss: number }>;
}

export async function startServer(env: Record<string, string>): Promise<Running> {
  const child = startChild(FIXTURE, env);
  try {
    const line = await child.waitForLine(/"listening":true/, BOUND_MS);
    const { port, controlPort } = JSON.parse(line) as { port: number; controlPort: number };
    assert.ok(port > 0 && controlPort > 0, line);
    const control = (path: string) => `http://127.0.0.1:${controlPort}${path}`;
    return {
      child,
      port,
      url: (path) => `http://127.0.0.1:${port}${path}`,
      stats: async (key) => {
        const res = await within(fetch(control(`/__stats${key === undefined ? "" : `?key=${encodeURIComponent(key)}`}`)), "GET /__stats");
        return (await res.json()) as Stats;
      },
      free: async (collect = true) => {
        const res = await within(fetch(control(`/__free${collect ? "" : "?collect=0"}`), { method: "POST" }), "POST /__free");
        return (await res.json()) as { collected: boolean; rss: number };
      },
    };
  } catch (error) {
    child.kill();
    throw error;
  }
}

/** Rejects when `promise` has not settled within `ms`, so no test can hang. */
export function within<T>(promise: Promise<T>, what: string, ms = BOUND_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 20 ms until it returns true; rejects with `what()` after `ms`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, what: () => string, ms = BOUND_MS): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`${what()}: not within ${ms} ms`);
    await delay(20);
  }
}

/** Polls /__stats until `ok` holds; returns the stats that satisfied it. */
export async function statsUntil(server: Running, ok: (s: Stats) => boolean, what: string, ms = BOUND_MS, key?: string): Promise<Stats> {
  let last: Stats | undefined;
  await waitUntil(async () => ok((last = await server.stats(key))), () => `${what}; last stats ${JSON.stringify(last)}`, ms);
  return last!;
}


/** Waits until the child has printed `count` records with `key` (and `value`, when given). */
export async function waitForRecord(child: Child, key: string, what: string, value?: unknown): Promise<Record<string, unknown>> {
  let hit: Record<string, unknown> | undefined;
  await waitUntil(
    () => (hit = records(child, key).find((r) => value === undefined || r[key] === value)) !== undefined,
    () => `${what}; stdout:\n${child.stdout()}\nstderr:\n${child.stderr()}`,
  );
  return hit!;
}

/** One client socket to 127.0.0.1 that records everything it receives and how it ended. */
export interface Sock {
  write(data: string | Uint8Array): boolean;
  /** Everything received so far that no `response()` has consumed. */
  received(): Buffer;
  /** The next whole response (rejects if the connection ends first). */
  response(ms?: number): Promise<Parsed>;
  /** Settles when the connection has ended: "end" (the server closed it) or "reset" (an error such as ECONNRESET). */
  readonly closed: Promise<"end" | "reset">;
  isClosed(): boolean;
  destroy(): void;
}

/** Connects to 127.0.0.1:`port`, optionally from a given loopback source address (127.0.0.2, …). */
export function openSock(port: number, localAddress?: string): Promise<Sock> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: "127.0.0.1", port, ...(localAddress === undefined ? {} : { localAddress }) });
    let buffer = Buffer.alloc(0);
    let ended = false;
    let how: "end" | "reset" = "end";
    let wake: (() => void) | undefined;
    let markClosed!: (how: "end" | "reset") => void;
    const closed = new Promise<"end" | "reset">((r) => (markClosed = r));
    const onConnectError = (error: Error) => reject(error);
    socket.once("error", onConnectError);
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      wake?.();
    });
    socket.on("close", () => {
      ended = true;
      markClosed(how);
      wake?.();
    });
    socket.once("connect", () => {
      socket.off("error", onConnectError);
      socket.on("error", () => (how = "reset"));
      resolve({
        write: (data) => (socket.destroyed ? false : socket.write(data)),
        received: () => buffer,
        async response(ms = BOUND_MS) {
          return await within((async () => {
            for (;;) {
              const parsed = parseResponse(buffer, ended);
              if (parsed !== undefined && parsed.complete) {
                buffer = buffer.subarray(parsed.used);
                return parsed;
              }
              if (ended) throw new Error(`connection ${how} before a whole response; got ${JSON.stringify(buffer.toString("latin1").slice(0, 300))}`);
              await new Promise<void>((r) => (wake = r));
            }
          })(), "a response", ms);
        },
        closed,
        isClosed: () => ended,
        destroy: () => socket.destroy(),
      });
    });
  });
}

/** Sends `head` (+ `body`) on a fresh connection and returns the first response. */
export async function rawRequest(port: number, head: string, body: string | Uint8Array = ""): Promise<Parsed> {
  const sock = await openSock(port);
  try {
    sock.write(head);
    if (body.length > 0) sock.write(body);
    return await sock.response();
  } finally {
    sock.destroy();
  }
}

/** One chunk of a chunked body. */
export const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
