import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { fromBunRedis, fromNodeRedis } from "../../src/redis/client.ts";
import { runtime } from "../support/runtime.ts";

describe(`redis client bindings (${runtime})`, () => {
  test(`node-redis: the binding sends the whole command through sendCommand (${runtime})`, async () => {
    const seen: string[][] = [];
    const client = fromNodeRedis({ sendCommand: async (args) => (seen.push(args), "OK") });
    assert.equal(await client.sendCommand(["EVALSHA", "abc", "1", "k", "v"]), "OK");
    assert.deepEqual(seen, [["EVALSHA", "abc", "1", "k", "v"]]);
  });

  test(`Bun: the binding splits the command name from its arguments (${runtime})`, async () => {
    const seen: unknown[] = [];
    const client = fromBunRedis({ send: async (command, args) => (seen.push([command, args]), 1) });
    assert.equal(await client.sendCommand(["SCRIPT", "LOAD", "return 1"]), 1);
    assert.deepEqual(seen, [["SCRIPT", ["LOAD", "return 1"]]]);
  });

  test(`a client without the method is refused when bound (${runtime})`, () => {
    assert.throws(() => fromNodeRedis({} as never), /Cannot bind node-redis as "client" must have a sendCommand\(\) method/);
    assert.throws(() => fromBunRedis(null as never), /must have a send\(\) method/);
  });
});
