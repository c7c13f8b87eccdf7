import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { BunServeConfig, BunServerLike } from "../../src/adapters/bun/bun_api.ts";
import { runtime } from "../support/runtime.ts";

// The Bun adapter declares the part of Bun's API it uses (src/adapters/bun/bun_api.ts) so it
// type-checks without Bun's types (Deno, JSR, a consumer's tsc). These lines are checked by
// tsc with bun-types (npm test's typecheck step): what the adapter hands Bun.serve is what
// Bun.serve accepts, and what Bun.serve returns has what the adapter reads.
type RealServeOptions = Parameters<typeof Bun.serve>[0];
type RealServer = ReturnType<typeof Bun.serve>;
export const _configFits = (config: BunServeConfig): RealServeOptions => config;
export const _serverFits = (server: RealServer): BunServerLike => server;

describe("bun adapter: Bun's API", () => {
  test(`bun adapter: the declared Bun API is what Bun provides where Bun runs (${runtime})`, () => {
    const bun = (globalThis as { Bun?: { serve?: unknown } }).Bun;
    if (runtime !== "bun") return assert.equal(bun, undefined);
    assert.equal(typeof bun?.serve, "function");
  });
});
