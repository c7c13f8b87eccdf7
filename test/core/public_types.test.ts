// The public types as a user compiles against them (the project type-checks with
// exactOptionalPropertyTypes, as strict consumers do): what this file says in types is checked
// by the typecheck step, what it says at run time by the test below. A types review found
// guard.wrap()'s function refused by every runtime's own server types, error codes typed as
// any string, and options that would not take an explicit undefined.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { HttpBindings } from "@hono/node-server";
import {
  BodyTooLargeError,
  createGuard,
  createInFlightLimiter,
  FlowQueueFullError,
  type HostOptions,
  HygieneError,
  type HygieneErrorCode,
  isBodyTooLargeError,
  isFlowQueueFullError,
  isHygieneError,
  isPeerBusyError,
  isRateLimitedError,
  isServeError,
  PeerBusyError,
  RateLimitedError,
  ServeError,
} from "../../src/mod.ts";
import { runtime } from "../support/runtime.ts";

/** Every code, through the exported union: a missing case fails to compile (`never`). */
function describeCode(code: HygieneErrorCode): string {
  switch (code) {
    case "RATE_LIMITED":
    case "PEER_BUSY":
      return "retry later";
    case "BODY_TOO_LARGE":
      return "too large";
    case "ERR_FLOW_QUEUE_FULL":
      return "flow queue full";
    case "SERVE_IO":
    case "SERVE_FLUSH":
      return "server";
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}

/** Never called: what it hands each runtime's own server must compile (guard.wrap()'s second argument takes theirs). */
function _handedToTheRuntimes(wrapped: ReturnType<ReturnType<typeof createGuard>["wrap"]>): void {
  Deno.serve(wrapped);
  Deno.serve((request, info) => wrapped(request, info));
  Bun.serve({ fetch: wrapped });
  Bun.serve({ fetch: (request, server) => wrapped(request, server) });
  const onHonoNodeServer: (request: Request, env: HttpBindings) => Promise<Response> = wrapped;
  void onHonoNodeServer;
}
void _handedToTheRuntimes;

describe(`public types (${runtime})`, () => {
  test("each error's code is its literal; the is*() guards know the class, not only the code", () => {
    const rate: "RATE_LIMITED" = new RateLimitedError({ retryAfterMs: 1, limit: 1 }).code;
    const peer: "PEER_BUSY" = new PeerBusyError({ retryAfterMs: 1, limit: 1 }).code;
    const body: "BODY_TOO_LARGE" = new BodyTooLargeError(10).code;
    const flow: "ERR_FLOW_QUEUE_FULL" = new FlowQueueFullError({ worker: 0, limit: 1 }).code;
    const serve: "SERVE_IO" | "SERVE_FLUSH" = new ServeError("io", new Error("x")).code;
    assert.deepEqual([rate, peer, body, flow, serve].map(describeCode), ["retry later", "retry later", "too large", "flow queue full", "server"]);
    // @ts-expect-error a misspelt code does not compile
    assert.equal(new RateLimitedError({ retryAfterMs: 1, limit: 1 }).code === "RATE_LIMTED", false);
    // A base error made with one of the codes is a HygieneError, not the class the code names:
    // the guards would otherwise promise a retryAfterMs, a limit, a kind it does not have.
    const forged = (code: HygieneErrorCode) => new HygieneError(code, "forged");
    assert.ok(isHygieneError(forged("RATE_LIMITED")));
    assert.equal(isRateLimitedError(forged("RATE_LIMITED")), false);
    assert.equal(isPeerBusyError(forged("PEER_BUSY")), false);
    assert.equal(isBodyTooLargeError(forged("BODY_TOO_LARGE")), false);
    assert.equal(isFlowQueueFullError(forged("ERR_FLOW_QUEUE_FULL")), false);
    assert.equal(isServeError(forged("SERVE_IO")), false);
    assert.ok(isRateLimitedError(new RateLimitedError({ retryAfterMs: 1, limit: 1 })));
    assert.ok(isPeerBusyError(new PeerBusyError({ retryAfterMs: 1, limit: 1 })));
    assert.ok(isBodyTooLargeError(new BodyTooLargeError(10)));
    assert.ok(isFlowQueueFullError(new FlowQueueFullError({ worker: 0, limit: 1 })));
    assert.ok(isServeError(new ServeError("flush", new Error("x"))));
  });

  test("an option given as undefined is an option not given, in the types and at run time", () => {
    const fromEnv = (name: string): number | undefined => (name === "set" ? 5 : undefined);
    const guard = createGuard({
      bodyLimitBytes: fromEnv("unset"),
      requestTimeoutMs: fromEnv("unset"),
      concurrencyLimit: fromEnv("unset"),
      shedWaitMs: undefined,
      loadMonitor: undefined,
      clientKey: () => "k",
      // The per-key gate has no overall cap of its own (gate 7 is the concurrency limit): an
      // undefined `overall` took the in-flight limiter's default of 1024.
      inFlightPerKey: { perKey: 2, overall: undefined, shedWaitMs: fromEnv("unset") },
    });
    try {
      assert.equal(guard.config.bodyLimitBytes, undefined);
      const plain = createGuard({});
      assert.equal(guard.config.requestTimeoutMs, plain.config.requestTimeoutMs);
      plain.dispose();
      assert.equal(guard.concurrency.adaptive, true);
      assert.equal(guard.inFlightPerKey?.overall, Infinity);
      assert.equal(guard.inFlightPerKey?.perKey, 2);
      assert.equal(createInFlightLimiter({ perKey: undefined, overall: undefined }).overall, 1024);
      // The rest that a review found still refusing it: a Host's IPC channel, a timer's unref, an error's scope.
      const host: HostOptions = { ipcChannel: undefined, rss: undefined };
      assert.equal(host.ipcChannel, undefined);
      const caught = new RateLimitedError({ retryAfterMs: 5, limit: 1, scope: undefined });
      assert.equal(new RateLimitedError(caught).scope, undefined);
    } finally {
      guard.dispose();
    }
  });
});
