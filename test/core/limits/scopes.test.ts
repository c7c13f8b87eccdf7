import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createScopedLimiter } from "../../../src/core/limits/scopes.ts";
import { createFixedWindowLimiter } from "../../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../../src/core/limits/token_bucket.ts";
import { createManualClock } from "../../../src/testing/manual_clock.ts";
import type { DenyEvent, HygieneEvent } from "../../../src/core/events.ts";
import { createRateStore } from "../../../src/core/limits/rate_store.ts";
import { ALLOW, createFakeBackend, DENY } from "../../support/fake_store.ts";

interface Ctx {
  tenant: string;
  ip: string;
}

function setup(onEvent?: (e: HygieneEvent) => void) {
  const clock = createManualClock();
  const global = createFixedWindowLimiter({ limit: 100, windowMs: 1000, clock, name: "global" });
  const tenantTotal = createTokenBucketLimiter({ ratePerSecond: 10, burst: 10, clock, name: "tenant" });
  const client = createFixedWindowLimiter({ limit: 2, windowMs: 1000, clock, name: "ip" });
  const scoped = createScopedLimiter<Ctx>({
    scopes: [
      { name: "global", limiter: global },
      { name: "tenant-total", limiter: tenantTotal, key: (c) => c.tenant },
      { name: "tenant", limiter: client, key: (c) => `${c.tenant}|${c.ip}` },
    ],
    ...(onEvent ? { onEvent } : {}),
  });
  return { clock, global, tenantTotal, client, scoped };
}

describe("scopes", () => {
  test("scopes: a request admitted by every scope is charged to every scope", () => {
    const { global, tenantTotal, client, scoped } = setup();
    const d = scoped.take({ tenant: "t1", ip: "1.1.1.1" });
    assert.equal(d.allowed, true);
    assert.equal(global.peek("global").remaining, 98);
    assert.equal(tenantTotal.peek("t1").remaining, 8);
    assert.equal(client.peek("t1|1.1.1.1").remaining, 0);
    assert.equal(d.scope, "tenant", "the scope with the least remaining speaks for the decision");
    assert.equal(d.remaining, 1);
  });

  test("scopes: a caller over its own budget does not decrement the global budget", () => {
    const { global, tenantTotal, scoped } = setup();
    const ctx = { tenant: "t1", ip: "1.1.1.1" };
    scoped.take(ctx);
    scoped.take(ctx);
    for (let i = 0; i < 50; i++) {
      const d = scoped.take(ctx);
      assert.equal(d.allowed, false);
      assert.equal(d.scope, "tenant");
    }
    assert.equal(global.peek("global").remaining, 97, "only the 2 admitted requests were charged");
    assert.equal(tenantTotal.peek("t1").remaining, 7);
  });

  test("scopes: the refusal names the coarsest refusing scope", () => {
    const clock = createManualClock();
    const global = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock });
    const tenant = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock });
    const scoped = createScopedLimiter<string>({
      scopes: [{ name: "global", limiter: global }, { name: "tenant", limiter: tenant, key: (t) => t }],
    });
    scoped.take("a");
    const d = scoped.take("a"); // both scopes would refuse
    assert.equal(d.allowed, false);
    assert.equal(d.scope, "global");
    assert.equal(d.reason, "over-limit");
    assert.equal(d.retryAfterMs, 1000);
  });

  test("scopes: where several scopes refuse, the refusal is the one waited out longest (its Retry-After is when every scope admits again)", () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    const coarse = createFixedWindowLimiter({ limit: 1, windowMs: 2000, clock, name: "coarse" });
    const client = createFixedWindowLimiter({ limit: 1, windowMs: 6000, clock, name: "client" });
    const scoped = createScopedLimiter<string>({
      scopes: [{ name: "all", limiter: coarse }, { name: "client", limiter: client, key: (c) => c }],
      onEvent: (e) => events.push(e),
    });
    assert.equal(scoped.take("a").allowed, true);
    const d = scoped.take("a"); // both refuse: the coarse rule for 2 s, the client's for 6 s
    assert.deepEqual([d.allowed, d.scope, d.retryAfterMs], [false, "client", 6000]);
    assert.deepEqual(events.map((e) => e.type === "deny" ? [e.scope, e.retryAfterMs] : e.type), [["client", 6000]], "one deny event, the longest refusal's");
    clock.advance(6000);
    assert.equal(scoped.take("a").allowed, true, "admitted once that wait is out");
    assert.equal(coarse.peek("all").remaining, 0, "the refusals charged nothing: one admission in each window");
  });

  test("scopes: with shared scopes, the longest refusal of the store's answer and of the in-memory scopes is the one reported", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "short", limiter: createFixedWindowLimiter({ name: "short", limit: 9, windowMs: 60_000, clock, store }), key: () => "all" },
        { name: "long", limiter: createFixedWindowLimiter({ name: "long", limit: 9, windowMs: 60_000, clock, store }), key: (c) => c },
      ],
    });
    const a = scoped.take("a");
    backend.calls[0]!.resolve([DENY(700), DENY(5000)]);
    const d = await a;
    assert.deepEqual([d.allowed, d.scope, d.retryAfterMs], [false, "long", 5000]);
    // Both denials are cached: the cached answer is the longer one too, with no store call.
    const b = scoped.take("a");
    assert.ok(!(b instanceof Promise));
    assert.deepEqual([b.allowed, b.scope, b.retryAfterMs], [false, "long", 5000]);
    assert.equal(backend.calls.length, 1);
    const local = createScopedLimiter<string>({
      scopes: [
        { name: "short", limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock }), key: () => "all" },
        { name: "long", limiter: createFixedWindowLimiter({ limit: 1, windowMs: 9000, clock }), key: (c) => c },
        { name: "shared", limiter: createFixedWindowLimiter({ name: "shared", limit: 9, clock, store }), key: (c) => c },
      ],
    });
    const first = local.take("b");
    backend.calls[1]!.resolve([ALLOW(8)]);
    assert.equal((await first).allowed, true);
    const refused = local.take("b");
    assert.ok(!(refused instanceof Promise), "an in-memory refusal costs no store call");
    assert.deepEqual([refused.allowed, refused.scope, refused.retryAfterMs], [false, "long", 9000]);
  });

  test("scopes: an in-memory scope's refusal reports a shared scope's denial cached here when it is longer — or as long: the coarser (listed first) speaks — with no store call", async () => {
    // The tenant's window (shared, cached once the store denied it) against the client's 1 s (in memory).
    for (const tenantMs of [10_000, 1000]) {
      const clock = createManualClock();
      const backend = createFakeBackend();
      const store = createRateStore(backend, { clock });
      const scoped = createScopedLimiter<string>({
        scopes: [
          { name: "tenant", limiter: createFixedWindowLimiter({ name: "tenant", limit: 2, windowMs: tenantMs, clock, store }), key: () => "t" },
          { name: "client", limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock }), key: (c) => c },
        ],
      });
      const a = scoped.take("a");
      backend.calls[0]!.resolve([ALLOW(1)]);
      assert.equal((await a).allowed, true);
      const b = scoped.take("b");
      backend.calls[1]!.resolve([DENY(tenantMs)]);
      assert.deepEqual([(await b).scope, (await b).retryAfterMs], ["tenant", tenantMs]);
      // "a" again: its own in-memory rule refuses for 1 s, the tenant's cached denial for tenantMs.
      const again = scoped.take("a");
      assert.ok(!(again instanceof Promise));
      assert.deepEqual([again.allowed, again.scope, again.retryAfterMs], [false, "tenant", tenantMs], `tenant ${tenantMs} ms`);
      assert.equal(backend.calls.length, 2);
    }
  });

  // The rate-limit headers review: the store's last "allowed" of a window (nothing left) was not
  // kept, so the in-memory rule's 1 s spoke, and a client obeying it met the shared window's 429.
  test("scopes: a shared window the store emptied refuses from then on, here, until it resets: an in-memory scope's shorter refusal reports that wait", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "shared", limiter: createFixedWindowLimiter({ name: "shared", limit: 4, windowMs: 5000, clock, store }), key: (c) => c },
        { name: "bucket", limiter: createTokenBucketLimiter({ ratePerSecond: 1, burst: 4, clock }), key: (c) => c },
      ],
    });
    for (let left = 3; left >= 0; left--) {
      const d = scoped.take("k");
      backend.calls.at(-1)!.resolve([{ ...ALLOW(left), resetMs: 5000 - 10 * (3 - left) }]);
      assert.equal((await d).allowed, true);
      clock.advance(10);
    }
    // 40 ms into the window: the bucket refuses for 1 s; the window is empty for 4,960 ms more.
    const fifth = scoped.take("k");
    assert.ok(!(fifth instanceof Promise), "no store call");
    assert.deepEqual([fifth.allowed, fifth.scope, fifth.retryAfterMs], [false, "shared", 4960]);
    assert.equal(backend.calls.length, 4);
    // Once the window has reset, the store is asked again.
    clock.advance(4960);
    const next = scoped.take("k");
    assert.ok(next instanceof Promise, "asked again");
    backend.calls.at(-1)!.resolve([ALLOW(3)]);
    assert.equal((await next).allowed, true);
  });

  // The diff review of the above: a call charges all or none, so where a client's own scope refused,
  // the tenant's "allowed, nothing left" was what it would have had, not what it has: cached, every
  // client of the tenant was refused here while the store still had its budget.
  test("scopes: a shared window is cached as emptied only from a call that charged it, not from one another scope refused", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "tenant", limiter: createFixedWindowLimiter({ name: "tenant", limit: 2, windowMs: 60_000, clock, store }), key: () => "t" },
        { name: "client", limiter: createFixedWindowLimiter({ name: "client", limit: 1, windowMs: 60_000, clock, store }), key: (c) => c },
      ],
    });
    const a = scoped.take("a");
    backend.calls.at(-1)!.resolve([{ ...ALLOW(0), resetMs: 60_000 }, DENY(60_000)]); // "a" over its own: nothing charged
    assert.deepEqual([(await a).allowed, (await a).scope], [false, "client"]);
    const c = scoped.take("c");
    assert.ok(c instanceof Promise, "the tenant is asked: it was not charged");
    backend.calls.at(-1)!.resolve([{ ...ALLOW(0), resetMs: 60_000 }, { ...ALLOW(0), resetMs: 60_000 }]); // charged: the tenant's window is empty now
    assert.equal((await c).allowed, true);
    const d = scoped.take("d");
    assert.ok(!(d instanceof Promise), "now the tenant's emptied window answers, with no call");
    assert.deepEqual([d.allowed, d.scope], [false, "tenant"]);
  });

  test("scopes: the refusal emits one deny event with the scope and limiter class, no key", () => {
    const events: HygieneEvent[] = [];
    const { scoped } = setup((e) => events.push(e));
    const ctx = { tenant: "tenant-secret", ip: "9.9.9.9" };
    scoped.take(ctx);
    scoped.take(ctx);
    scoped.take(ctx);
    assert.deepEqual(events, [
      { type: "deny", layer: "rate", reason: "over-limit", status: 429, retryAfterMs: 1000, scope: "tenant", limiterClass: "ip" },
    ]);
  });

  test("scopes: a key function that throws fails closed at its scope and emits a fault", () => {
    const events: HygieneEvent[] = [];
    const clock = createManualClock();
    const global = createFixedWindowLimiter({ limit: 10, windowMs: 5000, clock });
    const tenant = createTokenBucketLimiter({ ratePerSecond: 2, burst: 4, clock, name: "tenant" });
    const scoped = createScopedLimiter<{ tenant?: string }>({
      scopes: [
        { name: "global", limiter: global },
        { name: "tenant", limiter: tenant, key: (c) => c.tenant!.toLowerCase() },
      ],
      onEvent: (e) => events.push(e),
    });
    const d = scoped.take({});
    assert.equal(d.allowed, false);
    assert.equal(d.scope, "tenant");
    assert.equal(d.reason, "limiter-error");
    assert.equal(d.retryAfterMs, 500, "the tenant limiter's 1/rate");
    assert.equal(global.peek("global").remaining, 9, "nothing was charged");
    assert.equal(events[0]?.type, "fault");
    assert.ok(events[0]?.type === "fault" && events[0].source === "rate-limiter" && events[0].failed === "closed");
    assert.ok(events[0]?.type === "fault" && events[0].error instanceof TypeError);
    assert.deepEqual(events[1], {
      type: "deny", layer: "rate", reason: "limiter-error", status: 429, retryAfterMs: 500, scope: "tenant", limiterClass: "tenant",
    });
  });

  test("scopes: a third-party limiter whose peek or take throws fails closed at its scope like one that denies", () => {
    const events: HygieneEvent[] = [];
    const clock = createManualClock();
    const global = createFixedWindowLimiter({ limit: 10, windowMs: 5000, clock });
    let broken: "peek" | "take" = "peek";
    const foreign = {
      ...createTokenBucketLimiter({ ratePerSecond: 2, burst: 4, clock, name: "vendor" }),
      peek: () => {
        if (broken === "peek") throw new Error("vendor peek failed");
        return global.peek("unused");
      },
      take: () => {
        throw new Error("vendor take failed");
      },
    };
    const scoped = createScopedLimiter<{ tenant: string }>({
      scopes: [
        { name: "global", limiter: global },
        { name: "vendor", limiter: foreign, key: (c) => c.tenant },
      ],
      onEvent: (e) => events.push(e),
    });
    for (const which of ["peek", "take"] as const) {
      broken = which;
      events.length = 0;
      let d: ReturnType<typeof scoped.take> | undefined;
      assert.doesNotThrow(() => (d = scoped.take({ tenant: "a" })), `a throwing ${which} must not escape`);
      assert.equal(d!.allowed, false);
      assert.equal(d!.reason, "limiter-error");
      assert.equal(d!.scope, "vendor");
      assert.equal(d!.retryAfterMs, 500, "the limiter's fail-closed Retry-After");
      assert.ok(events.some((e) => e.type === "fault" && e.failed === "closed" && e.error instanceof Error));
      assert.deepEqual(events.filter((e) => e.type === "deny"), [
        { type: "deny", layer: "rate", reason: "limiter-error", status: 429, retryAfterMs: 500, scope: "vendor", limiterClass: "vendor" },
      ]);
      // peek() reports what would remain after this request: 9 means nothing was charged yet.
      const charged = which === "peek" ? 0 : 1; // a throwing take comes after global was charged
      assert.equal(global.peek("global").remaining, 9 - charged);
    }
  });

  test("scopes: one time read is handed to every scope; a passed now is used as is", () => {
    let reads = 0;
    const manual = createManualClock();
    const clock = { ...manual, now: () => (reads++, manual.now()) };
    const a = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock });
    const b = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock });
    const scoped = createScopedLimiter<null>({ scopes: [{ name: "a", limiter: a }, { name: "b", limiter: b }] });
    scoped.take(null);
    assert.equal(reads, 1);
    scoped.take(null, 1, 250);
    assert.equal(reads, 1);
    assert.equal(a.peek("a", 1, 250).remaining, 2);
  });

  test("scopes: a cost is charged to every scope; a cost above a scope's budget throws", () => {
    const { global, scoped } = setup();
    scoped.take({ tenant: "t", ip: "i" }, 2);
    assert.equal(global.peek("global").remaining, 97);
    assert.throws(() => scoped.take({ tenant: "t", ip: "i" }, 3), RangeError);
    assert.equal(global.peek("global").remaining, 97);
  });

  test("scopes: a scope's skip leaves the request unmetered there — neither peeked, charged nor refused — and the other scopes meter it", () => {
    const clock = createManualClock();
    const global = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock, name: "global" });
    const client = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock, name: "ip" });
    const keyed: string[] = [];
    const scoped = createScopedLimiter<{ ip: string; probe: boolean }>({
      scopes: [
        { name: "global", limiter: global, skip: (c) => c.probe },
        { name: "ip", limiter: client, key: (c) => (keyed.push(c.ip), c.ip) },
      ],
    });
    assert.equal(scoped.take({ ip: "a", probe: false }).allowed, true);
    assert.equal(scoped.take({ ip: "a", probe: false }).scope, "global", "the global budget of 1 is spent");
    const probe = scoped.take({ ip: "a", probe: true });
    assert.deepEqual([probe.allowed, probe.scope, probe.remaining], [true, "ip", 3], "skipped at global, charged at ip");
    assert.equal(global.peek("global").remaining, 0);
    // Every scope skipped: allowed, nothing metered, no key asked.
    const none = createScopedLimiter<boolean>({ scopes: [{ name: "g", limiter: createFixedWindowLimiter({ limit: 1, clock }), skip: (probe) => probe }] });
    none.take(false);
    for (let i = 0; i < 3; i++) {
      const d = none.take(true);
      assert.deepEqual([d.allowed, d.scope, d.remaining, d.limit, d.retryAfterMs], [true, "", Infinity, Infinity, 0]);
    }
    assert.equal(none.take(false).allowed, false, "the budget it meters is still spent");
    assert.deepEqual(keyed, ["a", "a", "a"], "the refused one's key was asked too: every scope is peeked, for the longest refusal");
  });

  test("scopes: a skip that throws or returns no boolean (a promise from an async function) denies at its scope with a fault, never skips", async () => {
    const clock = createManualClock();
    const events: HygieneEvent[] = [];
    const global = createFixedWindowLimiter({ limit: 10, windowMs: 1000, clock });
    const make = (skip: (c: number) => boolean) =>
      createScopedLimiter<number>({ scopes: [{ name: "global", limiter: global, skip }], onEvent: (e) => events.push(e) });
    for (const skip of [() => { throw new Error("broken"); }, (async () => true) as never, (() => 1) as never, (() => undefined) as never]) {
      const d = make(skip).take(0);
      assert.deepEqual([d.allowed, d.scope, d.reason], [false, "global", "limiter-error"]);
    }
    assert.equal(events.filter((e) => e.type === "fault").length, 4);
    const faults = events.filter((e) => e.type === "fault") as { error: unknown }[];
    assert.match(String(faults[1]!.error), /^TypeError: a scope's \(a rateLimits rule's\) skip function must return a boolean: it returned a promise \(an async function\?\)$/);
    assert.match(String(faults[3]!.error), /it returned undefined$/);
    assert.equal(global.peek("global").remaining, 9, "nothing charged (a peek reports as if charged)");
  });

  test("scopes: with shared scopes, a skipped shared scope is not asked of the store, and with every shared scope skipped there is no store call", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const local = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock });
    const scoped = createScopedLimiter<{ ip: string; probe: boolean }>({
      scopes: [
        { name: "listener", limiter: local, key: () => "all" },
        { name: "tenant", limiter: createFixedWindowLimiter({ name: "tenant", limit: 9, clock, store }), key: () => "t", skip: (c) => c.probe },
        { name: "client", limiter: createFixedWindowLimiter({ name: "client", limit: 9, clock, store }), key: (c) => c.ip },
      ],
    });
    const a = scoped.take({ ip: "1.1.1.1", probe: true });
    assert.ok(a instanceof Promise);
    assert.deepEqual(backend.calls[0]!.checks.map((c) => c.limiter), ["client"], "the skipped scope is not asked");
    backend.calls[0]!.resolve([ALLOW(4)]);
    assert.deepEqual(await a, { ...(await a), allowed: true, scope: "listener", remaining: 4 });
    const onlyLocal = createScopedLimiter<boolean>({
      scopes: [
        { name: "listener", limiter: createFixedWindowLimiter({ limit: 2, windowMs: 1000, clock }), key: () => "all" },
        { name: "client", limiter: createFixedWindowLimiter({ name: "c2", limit: 9, clock, store }), skip: (probe) => probe },
      ],
    });
    const d = onlyLocal.take(true);
    assert.ok(!(d instanceof Promise), "answered without the store");
    assert.deepEqual([d.allowed, d.scope, d.remaining], [true, "listener", 1]);
    const all = createScopedLimiter<boolean>({ scopes: [{ name: "c3", limiter: createFixedWindowLimiter({ name: "c3", limit: 1, clock, store }), skip: (probe) => probe }] });
    const u = all.take(true);
    assert.ok(!(u instanceof Promise));
    assert.deepEqual([u.allowed, u.scope, u.remaining], [true, "", Infinity]);
    assert.equal(backend.calls.length, 1, "one store call in all");
  });

  test("scopes: configuration errors throw at creation", () => {
    const limiter = createFixedWindowLimiter();
    assert.throws(() => createScopedLimiter({ scopes: [] }), TypeError);
    assert.throws(
      () => createScopedLimiter({ scopes: [{ name: "a", limiter }, { name: "b", limiter }] }),
      /scope "b" needs a limiter of its own/,
    );
    assert.throws(
      () => createScopedLimiter({ scopes: [{ name: "a", limiter }, { name: "a", limiter: createFixedWindowLimiter() }] }),
      TypeError,
    );
    assert.throws(() => createScopedLimiter({ scopes: [{ name: "a", limiter, key: "x" as never }] }), TypeError);
    assert.throws(() => createScopedLimiter({ scopes: [{ name: "a", limiter, skip: true as never }] }), /^TypeError: Cannot create scoped limiter as the "skip" of scope "a" must be a function: current value is true$/);
    const scoped = createScopedLimiter({ scopes: [{ name: "global", limiter }, { name: "ip", limiter: createFixedWindowLimiter() }] });
    assert.deepEqual(scoped.scopes, ["global", "ip"]);
  });

  test("scopes: shared scopes are checked in one store call, all or nothing, and local ones charged only after it admits", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const events: HygieneEvent[] = [];
    const local = createFixedWindowLimiter({ limit: 5, windowMs: 1000, clock });
    const scoped = createScopedLimiter<Ctx>({
      scopes: [
        { name: "listener", limiter: local, key: () => "all" },
        { name: "tenant-total", limiter: createTokenBucketLimiter({ name: "tenant", ratePerSecond: 1, burst: 10, clock, store }), key: (c) => c.tenant },
        { name: "tenant", limiter: createFixedWindowLimiter({ name: "client", limit: 2, windowMs: 1000, clock, store }), key: (c) => c.ip },
      ],
      onEvent: (e) => events.push(e),
    });
    const a = scoped.take({ tenant: "t1", ip: "1.1.1.1" });
    assert.ok(a instanceof Promise);
    assert.equal(backend.calls.length, 1, "one call for both shared scopes");
    assert.deepEqual(backend.calls[0]!.checks.map((c) => [c.algorithm, c.limiter, c.key]), [
      ["token-bucket", "tenant", "t1"],
      ["fixed-window", "client", "1.1.1.1"],
    ]);
    assert.equal(local.peek("all").remaining, 4, "nothing local charged before the store admits (a peek reports as if charged)");
    backend.calls[0]!.resolve([ALLOW(9), ALLOW(1)]);
    const d = await a;
    assert.deepEqual([d.allowed, d.scope, d.remaining], [true, "tenant", 1]);
    assert.equal(local.peek("all").remaining, 3);
    const b = scoped.take({ tenant: "t1", ip: "1.1.1.1" }) as Promise<{ allowed: boolean; scope: string; retryAfterMs: number }>;
    backend.calls[1]!.resolve([ALLOW(8), DENY(700)]);
    const refused = await b;
    assert.deepEqual([refused.allowed, refused.scope, refused.retryAfterMs], [false, "tenant", 700]);
    assert.equal(local.peek("all").remaining, 3, "a shared denial charges nothing local");
    const deny = events.filter((e) => e.type === "deny") as DenyEvent[];
    assert.deepEqual(deny.map((e) => [e.scope, e.limiterClass]), [["tenant", "client"]]);
  });

  test("scopes: an in-memory scope that refuses costs no store call", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "listener", limiter: createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock }), key: () => "all" },
        { name: "client", limiter: createFixedWindowLimiter({ name: "client", limit: 9, clock, store }), key: (c) => c },
      ],
    });
    const first = scoped.take("a");
    backend.calls[0]!.resolve([ALLOW(8)]);
    assert.equal((await first).allowed, true);
    const d = scoped.take("b");
    assert.ok(!(d instanceof Promise));
    assert.deepEqual([d.allowed, d.scope], [false, "listener"]);
    assert.equal(backend.calls.length, 1);
  });

  test("scopes: an in-memory budget spent while a store call was out denies the request; nothing is admitted over it", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const store = createRateStore(backend, { clock });
    const listener = createFixedWindowLimiter({ limit: 1, windowMs: 1000, clock });
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "listener", limiter: listener, key: () => "all" },
        { name: "client", limiter: createFixedWindowLimiter({ name: "client", limit: 9, clock, store }), key: (c) => c },
      ],
    });
    const a = scoped.take("a");
    const b = scoped.take("b");
    assert.equal(backend.calls.length, 2, "both passed the listener's peek while neither was charged");
    backend.calls[0]!.resolve([ALLOW(8)]);
    backend.calls[1]!.resolve([ALLOW(8)]);
    const [da, db] = [await a, await b];
    assert.deepEqual([da.allowed, db.allowed, db.scope], [true, false, "listener"]);
    assert.equal(listener.peek("all").allowed, false);
  });

  test("scopes: that refusal is one deny event, the scope's, even when the in-memory limiter has the same sink", async () => {
    const clock = createManualClock();
    const backend = createFakeBackend();
    const events: HygieneEvent[] = [];
    const sink = (e: HygieneEvent) => void events.push(e);
    const scoped = createScopedLimiter<string>({
      scopes: [
        { name: "listener", limiter: createFixedWindowLimiter({ name: "listener", limit: 1, windowMs: 1000, clock, onEvent: sink }), key: () => "all" },
        { name: "client", limiter: createFixedWindowLimiter({ name: "client", limit: 9, clock, store: createRateStore(backend, { clock }), onEvent: sink }), key: (c) => c },
      ],
      onEvent: sink,
    });
    const a = scoped.take("a");
    const b = scoped.take("b");
    backend.calls[0]!.resolve([ALLOW(8)]);
    backend.calls[1]!.resolve([ALLOW(8)]);
    assert.deepEqual([(await a).allowed, (await b).allowed], [true, false]);
    assert.deepEqual(events.filter((e) => e.type === "deny").map((e) => e.type === "deny" && [e.scope, e.limiterClass]), [["listener", "listener"]]);
  });

  test("scopes: shared scopes must use one store and distinct names", () => {
    const clock = createManualClock();
    const one = createRateStore(createFakeBackend(), { clock });
    const two = createRateStore(createFakeBackend(), { clock });
    const fw = (name: string, store: typeof one) => createFixedWindowLimiter({ name, clock, store });
    assert.throws(
      () => createScopedLimiter({ scopes: [{ name: "a", limiter: fw("a", one) }, { name: "b", limiter: fw("b", two) }] }),
      /shared scopes must use one store/,
    );
    assert.throws(
      () => createScopedLimiter({ scopes: [{ name: "a", limiter: fw("same", one) }, { name: "b", limiter: fw("same", one) }] }),
      /must have distinct names/,
    );
  });
});
