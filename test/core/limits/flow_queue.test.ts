import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createFlowQueue,
  FlowQueueFullError,
  isFlowQueueFullError,
  type FlowQueue,
} from "../../../src/core/limits/flow_queue.ts";
import { HygieneError, isHygieneError } from "../../../src/core/errors.ts";
import type { HygieneEvent } from "../../../src/core/events.ts";
import { Hono } from "hono";
import { serveHere } from "../../support/adapter.ts";
import { runtime } from "../../support/runtime.ts";

/** A promise settled by hand: tasks block on these, so nothing here waits on time. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Lets every pending microtask and promise reaction run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** `count` keys that the queue puts on `count` different workers. */
function keysOnDistinctWorkers(queue: FlowQueue, count: number): string[] {
  const byWorker = new Map<number, string>();
  for (let i = 0; byWorker.size < count && i < 10_000; i++) {
    const key = `doc-${i}`;
    if (!byWorker.has(queue.workerOf(key))) byWorker.set(queue.workerOf(key), key);
  }
  assert.equal(byWorker.size, count);
  return [...byWorker.values()];
}

/** `count` distinct keys that share one worker with `key`. */
function keysOnSameWorker(queue: FlowQueue, key: string, count: number): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count && i < 10_000; i++) {
    const other = `other-${i}`;
    if (queue.workerOf(other) === queue.workerOf(key)) found.push(other);
  }
  return found;
}

describe("flow queue", () => {
  test("flow queue: tasks of one key run in arrival order, one at a time, however their work interleaves", async () => {
    const queue = createFlowQueue({ workers: 3, capacity: 300 });
    const keys = ["a", "b", "c", "d", "e"];
    const gates: ReturnType<typeof deferred<void>>[] = [];
    const log: string[] = [];
    const running = new Map<string, number>();
    const done: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      const key = keys[(i * 7) % keys.length]!;
      const gate = deferred<void>();
      gates.push(gate);
      done.push(queue.run(key, async () => {
        running.set(key, (running.get(key) ?? 0) + 1);
        assert.equal(running.get(key), 1, `two tasks of ${key} overlapped`);
        log.push(`${key}:${i}`);
        await gate.promise;
        running.set(key, running.get(key)! - 1);
      }));
    }
    // Release the tasks' work in a scrambled order, letting the lanes move in between.
    for (let i = 0; i < gates.length; i++) {
      gates[(i * 17) % gates.length]!.resolve();
      await settle();
    }
    await Promise.all(done);
    for (const key of keys) {
      const order = log.filter((e) => e.startsWith(`${key}:`)).map((e) => Number(e.split(":")[1]));
      assert.deepEqual(order, [...order].sort((x, y) => x - y), `${key} ran out of order: ${order.join(",")}`);
      assert.equal(order.length, 8);
    }
    assert.equal(queue.size, 0);
  });

  test("flow queue: keys on different workers run at the same time; one key's task never starts inline in run()", async () => {
    const queue = createFlowQueue({ workers: 4, capacity: 16 });
    const [k1, k2, k3] = keysOnDistinctWorkers(queue, 3);
    const hold = deferred();
    const started: string[] = [];
    const tasks = [k1!, k2!, k3!].map((key) =>
      queue.run(key, async () => {
        started.push(key);
        await hold.promise;
      })
    );
    assert.deepEqual(started, [], "run() calls no task synchronously");
    await settle();
    assert.deepEqual(started.sort(), [k1!, k2!, k3!].sort(), "all three hold their workers at once");
    assert.equal(queue.size, 3);
    hold.resolve();
    await Promise.all(tasks);
    assert.equal(queue.size, 0);
  });

  test("flow queue: a worker over its share of the capacity sheds exactly the excess, without spilling to another worker or running it", async () => {
    const events: HygieneEvent[] = [];
    const queue = createFlowQueue({ workers: 2, capacity: 6, onEvent: (e) => void events.push(e) }); // 3 a worker
    const [hot, cold] = keysOnDistinctWorkers(queue, 2);
    const neighbours = keysOnSameWorker(queue, hot!, 4);
    const hold = deferred();
    let ran = 0;
    const task = async () => {
      ran++;
      await hold.promise;
    };
    const outcomes = [hot!, ...neighbours, hot!, hot!, hot!, hot!, hot!].map((key) => queue.run(key, task).then(() => "ok", (e) => e));
    // The other worker still has its whole share.
    const coldOutcomes = [cold!, cold!, cold!].map((key) => queue.run(key, task).then(() => "ok", (e) => e));
    await settle();
    assert.equal(ran, 2, "one task running on each worker");
    hold.resolve();
    const results = await Promise.all(outcomes);
    assert.deepEqual(await Promise.all(coldOutcomes), ["ok", "ok", "ok"]);
    const refused = results.filter((r) => r !== "ok");
    assert.equal(refused.length, 10 - 3);
    assert.deepEqual(results.slice(0, 3), ["ok", "ok", "ok"], "the first three arrivals hold the worker's share");
    for (const error of refused) {
      assert.ok(isFlowQueueFullError(error));
      assert.ok(error instanceof FlowQueueFullError && error instanceof HygieneError && isHygieneError(error));
      assert.equal(error.code, "ERR_FLOW_QUEUE_FULL");
      assert.equal(error.limit, 3);
      assert.equal(error.worker, queue.workerOf(hot!));
    }
    assert.equal(ran, 3 + 3, "refused tasks never ran");
    assert.equal(queue.shed, 7);
    assert.equal(events.length, 7);
    assert.ok(events.every((e) => e.type === "deny" && e.layer === "flow" && e.reason === "queue-full" && e.status === 503));
    assert.equal(queue.size, 0);
  });

  test("flow queue: a task that throws rejects its own promise and its lane goes on", async () => {
    const queue = createFlowQueue({ workers: 1, capacity: 4 });
    const boom = new Error("boom");
    const order: string[] = [];
    const first = queue.run("doc", async () => {
      order.push("first");
      throw boom;
    });
    const sync = queue.run("doc", () => {
      order.push("sync");
      throw new TypeError("thrown before any await");
    });
    const third = queue.run("doc", async () => {
      order.push("third");
      return 42;
    });
    await assert.rejects(first, (e) => e === boom);
    await assert.rejects(sync, TypeError);
    assert.equal(await third, 42);
    assert.deepEqual(order, ["first", "sync", "third"]);
    assert.equal(queue.size, 0);
  });

  test("flow queue: aborting a waiting task removes it at once, frees its place, and it never runs", async () => {
    const queue = createFlowQueue({ workers: 1, capacity: 3 });
    const hold = deferred();
    const ran: string[] = [];
    const first = queue.run("doc", async () => {
      ran.push("first");
      await hold.promise;
    });
    const controller = new AbortController();
    const second = queue.run("doc", async () => void ran.push("second"), { signal: controller.signal });
    const third = queue.run("doc", async () => void ran.push("third"));
    assert.equal(queue.size, 3);
    await assert.rejects(queue.run("doc", async () => {}), isFlowQueueFullError);
    controller.abort();
    await assert.rejects(second, (e) => (e as Error).name === "AbortError");
    assert.equal(queue.size, 2, "the aborted task left the queue at once");
    const fourth = queue.run("doc", async () => void ran.push("fourth"));
    hold.resolve();
    await Promise.all([first, third, fourth]);
    assert.deepEqual(ran, ["first", "third", "fourth"]);
    // An already aborted signal is refused before it takes a place.
    const gone = AbortSignal.abort();
    await assert.rejects(queue.run("doc", async () => {}, { signal: gone }), (e) => e === gone.reason);
    assert.equal(queue.shed, 1, "an abort is not a shed");
    assert.equal(queue.size, 0);
  });

  test("flow queue: a key always maps to the same worker, spread over all of them", () => {
    const queue = createFlowQueue({ workers: 8, capacity: 64 });
    const again = createFlowQueue({ workers: 8, capacity: 64 });
    const used = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const worker = queue.workerOf(`tenant-${i}`);
      assert.equal(worker, again.workerOf(`tenant-${i}`));
      assert.ok(worker >= 0 && worker < 8);
      used.add(worker);
    }
    assert.equal(used.size, 8);
  });

  test("flow queue: bad options and arguments throw naming the field", async () => {
    assert.throws(() => createFlowQueue({ workers: 0, capacity: 4 }), /^RangeError: Cannot create flow queue as "workers" must be a positive integer: current value is 0$/);
    assert.throws(() => createFlowQueue({ workers: 2.5, capacity: 4 }), RangeError);
    assert.throws(() => createFlowQueue({ workers: 2, capacity: Infinity }), /"capacity" must be a positive integer: current value is Infinity/);
    assert.throws(() => createFlowQueue({ workers: 4, capacity: 3 }), /Cannot create flow queue as "capacity" must be at least "workers": current values are 3 and 4/);
    assert.throws(() => createFlowQueue(undefined as never), /"workers" must be a positive integer: current value is undefined/);
    assert.throws(() => createFlowQueue("x" as never), TypeError);
    const queue = createFlowQueue({ workers: 1, capacity: 1 });
    assert.throws(() => queue.run(1 as never, async () => {}), /^TypeError: Cannot run flow task as "key" must be a string: current value is 1$/);
    assert.throws(() => queue.run("k", "nope" as never), /^TypeError: Cannot run flow task as "task" must be a function: current value is "nope"$/);
    assert.throws(() => queue.workerOf(5 as never), /^TypeError: Cannot find flow worker as "key" must be a string: current value is 5$/);
    assert.throws(() => queue.workerOf(undefined as never), /"key" must be a string: current value is undefined/);
    assert.throws(() => createFlowQueue({ workers: 2 ** 32, capacity: 2 ** 32 }), /^RangeError: Cannot create flow queue as "workers" must be at most 65536: current value is 4294967296$/);
    assert.equal(createFlowQueue({ workers: 65_536, capacity: 65_536 }).workerOf("k") < 65_536, true);
  });

  test("flow queue: a run with a signal that is not an AbortSignal is refused before it is counted", async () => {
    const queue = createFlowQueue({ workers: 1, capacity: 4 });
    for (let i = 0; i < 5; i++) {
      assert.throws(() => queue.run("k", () => 1, { signal: {} as never }), /^TypeError: Cannot run flow task as "signal" must be an AbortSignal: current value is \[object Object\]$/);
    }
    assert.throws(() => queue.run("k", () => 1, "x" as never), /^TypeError: Cannot run flow task as "options" must be an object/);
    // One that looks like a signal but cannot be listened to rejects the run, uncounted.
    const deaf = { aborted: false, addEventListener() { throw new Error("nope"); }, removeEventListener() {} } as unknown as AbortSignal;
    await assert.rejects(queue.run("k", () => 1, { signal: deaf }), /nope/);
    assert.equal(queue.size, 0, "nothing held");
    // The worker still takes its whole share.
    const held = Array.from({ length: 4 }, (_, i) => queue.run("k", () => i));
    assert.equal(queue.size, 4);
    assert.deepEqual(await Promise.all(held), [0, 1, 2, 3]);
    assert.equal(queue.size, 0);
  });
});

describe(`flow queue in a route (${runtime})`, () => {
  test(`flow queue: a Hono route serialises writes per document over real HTTP, and a full worker answers 503 (${runtime})`, async () => {
    const writes = createFlowQueue({ workers: 2, capacity: 6 }); // 3 held per worker
    const texts = ["one", "two", "three"];
    const storage = new Map(texts.map((t) => [t, deferred<void>()])); // each write's round trip
    const doc: string[] = [];
    const started: string[] = [];
    let onQueued: (() => void) | undefined;
    const app = new Hono();
    app.put("/docs/:id", async (c) => {
      const text = await c.req.text();
      const write = writes.run(c.req.param("id"), async () => {
        started.push(text);
        await storage.get(text)?.promise;
        doc.push(text);
      });
      onQueued?.();
      try {
        await write;
        return c.text("ok");
      } catch (error) {
        if (isFlowQueueFullError(error)) return c.text("Service Unavailable", 503, { "retry-after": "1" });
        throw error;
      }
    });
    const handle = await serveHere(app.fetch);
    const put = (text: string) =>
      fetch(`http://127.0.0.1:${handle.address.port}/docs/readme`, { method: "PUT", body: text }).then(async (r) => [r.status, await r.text()] as const);
    try {
      // Each write is sent once the previous one reached the queue: arrival order is known.
      const sent: Promise<readonly [number, string]>[] = [];
      for (const text of texts) {
        const queued = new Promise<void>((resolve) => (onQueued = resolve));
        sent.push(put(text));
        await queued;
      }
      assert.equal(writes.size, 3);
      // The document's worker holds its share: the next write is shed, never run.
      assert.deepEqual(await put("four"), [503, "Service Unavailable"]);
      // The round trips finish in the reverse order: the writes still apply in arrival order.
      for (const text of [...texts].reverse()) storage.get(text)!.resolve();
      assert.deepEqual(await Promise.all(sent), [[200, "ok"], [200, "ok"], [200, "ok"]]);
      assert.deepEqual(started, texts);
      assert.deepEqual(doc, texts);
      assert.equal(writes.shed, 1);
    } finally {
      await handle.shutdown();
    }
  });
});
