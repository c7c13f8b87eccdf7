// A Server test double: every outcome is in the test's hands, nothing listens.
import type { Server } from "../../src/core/host/server.ts";

export interface FakeServerOptions {
  /**
   * How `stopAccepting()` settles: at once, when the test calls `settleStop()`, or never
   * (Deno's `server.shutdown()` while a request is stuck: it cannot be forced).
   * @default "immediate"
   */
  stop?: "immediate" | "manual" | "never";
  /** Open connections reported by `connectionCount()`. @default 0 */
  connections?: number;
}

export interface FakeServer extends Server {
  /** Times `stopAccepting()` was called. */
  readonly stopAcceptingCalls: number;
  /** Times `closeAll()` was called. */
  readonly closeAllCalls: number;
  /** Settles a pending `stopAccepting()` (stop: "manual"). */
  settleStop(): void;
  /** The server ends on its own: `closed` resolves. */
  end(): void;
  /** The listener fails: `closed` rejects with `error`. */
  fail(error: unknown): void;
  connections: number;
  /** Everything the drain did to the server, in order, for ordering assertions. */
  readonly calls: string[];
}

export function createFakeServer(options: FakeServerOptions = {}): FakeServer {
  const stop = options.stop ?? "immediate";
  let resolveClosed!: () => void;
  let rejectClosed!: (error: unknown) => void;
  const closed = new Promise<void>((resolve, reject) => {
    resolveClosed = resolve;
    rejectClosed = reject;
  });
  // A rejection the code under test never looks at must not fail the test run.
  closed.catch(() => {});
  let resolveStop: (() => void) | undefined;
  let stopRequested = false;
  const calls: string[] = [];
  let stopAcceptingCalls = 0;
  let closeAllCalls = 0;

  const fake: FakeServer = {
    address: { hostname: "127.0.0.1", port: 0 },
    closed,
    connections: options.connections ?? 0,
    calls,
    get stopAcceptingCalls() {
      return stopAcceptingCalls;
    },
    get closeAllCalls() {
      return closeAllCalls;
    },
    stopAccepting() {
      stopAcceptingCalls++;
      calls.push("stopAccepting");
      if (stop === "immediate") return Promise.resolve();
      return new Promise<void>((resolve) => {
        stopRequested = true;
        if (stop === "manual") resolveStop = resolve;
      });
    },
    closeAll() {
      closeAllCalls++;
      calls.push("closeAll");
    },
    connectionCount: () => fake.connections,
    settleStop() {
      if (!stopRequested) throw new Error("stopAccepting() was not called");
      resolveStop?.();
    },
    end: () => resolveClosed(),
    fail: (error) => rejectClosed(error),
  };
  return fake;
}
