// The real-Redis harness itself (test/support/redis.ts): what the shared-store tests rely on.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startRedis, type RedisServer } from "../support/redis.ts";
import { RespError } from "../support/resp.ts";
import { runtime } from "../support/runtime.ts";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe(`redis harness: a real redis-server for the tests (${runtime})`, () => {
  let redis: RedisServer;
  after(() => redis?.stop());

  test(`starts on a free loopback port with persistence off and answers PING (${runtime})`, async () => {
    redis = await startRedis();
    assert.ok(redis.port > 0);
    assert.equal(redis.url, `redis://127.0.0.1:${redis.port}`);
    assert.equal(await redis.command("PING"), "PONG");
    assert.deepEqual(await redis.command("CONFIG", "GET", "save"), ["save", ""]);
    assert.deepEqual(await redis.command("CONFIG", "GET", "appendonly"), ["appendonly", "no"]);
    assert.deepEqual(await redis.command("CONFIG", "GET", "bind"), ["bind", "127.0.0.1"]);
  });

  test(`DEBUG is enabled, so a test can make Redis slow (${runtime})`, async () => {
    assert.equal(await redis.command("DEBUG", "SLEEP", "0"), "OK");
  });

  test(`counts commands by name through INFO commandstats (${runtime})`, async () => {
    await redis.command("SET", "harness:k", "1");
    await redis.command("GET", "harness:k");
    await redis.command("GET", "harness:k");
    const calls = await redis.commandCalls();
    assert.equal(calls.get, 2);
    assert.equal(calls.set, 1);
  });

  test(`killed, it stops answering; restarted, it answers on the same port, empty (${runtime})`, async () => {
    const before = redis.pid;
    await redis.kill();
    assert.equal(redis.running(), false);
    assert.equal(alive(before), false);
    await assert.rejects(redis.command("PING"));
    await redis.restart();
    assert.notEqual(redis.pid, before);
    assert.equal(redis.running(), true);
    assert.equal(await redis.command("PING"), "PONG");
    assert.equal(await redis.command("GET", "harness:k"), null);
  });

  test(`a server of another test on the same port never passes for the one being started (${runtime})`, async () => {
    await assert.rejects(startRedis({ port: redis.port }), /exited while starting/);
    assert.equal(await redis.command("PING"), "PONG", "the first server is untouched");
  });

  test(`an error reply comes back as a value (${runtime})`, async () => {
    assert.ok((await redis.command("NO-SUCH-COMMAND")) instanceof RespError);
  });

  test(`stop ends the process by PID and is idempotent (${runtime})`, async () => {
    const pid = redis.pid;
    await redis.stop();
    await redis.stop();
    assert.equal(alive(pid), false);
  });

  test(`a missing server binary fails with how to install it, never a skip (${runtime})`, async () => {
    await assert.rejects(startRedis({ binary: "no-such-redis-server-binary" }), /no-such-redis-server-binary was not found on PATH.*apt-get install -y redis-server/);
  });
});
