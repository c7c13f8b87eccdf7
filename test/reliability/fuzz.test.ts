// Reliability: property-based tests (fast-check), in-process. Config: every value a knob can
// be given is either accepted as is or refused at construction with a RangeError/TypeError
// whose message names the field — never accepted and silently read as something else.
// Headers: no header value (Content-Length, Transfer-Encoding, X-Forwarded-For, Forwarded)
// and no peer address makes the guard throw instead of answering, and the answer is the one
// the framing rules give. Plus the guard's own framing gate on the exact values,
// which no runtime's parser lets through over HTTP (framing.test.ts).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { runtime } from "../support/runtime.ts";
import { createGuard, type GuardOptions } from "../../src/core/guard.ts";
import { createManualClock } from "../../src/testing/manual_clock.ts";
import { createFixedWindowLimiter } from "../../src/core/limits/fixed_window.ts";
import { createTokenBucketLimiter } from "../../src/core/limits/token_bucket.ts";
import { createClientKey } from "../../src/core/limits/client_key.ts";
import { validateLifecycle } from "../../src/core/lifecycle/lifecycle_config.ts";

type Rule = (v: unknown) => boolean;
const num = (v: unknown): v is number => typeof v === "number";
const posIntOrInf: Rule = (v) => num(v) && (v === Infinity || (Number.isSafeInteger(v) && v > 0));
const posInt: Rule = (v) => num(v) && Number.isSafeInteger(v) && v > 0;
const nonNegInt: Rule = (v) => num(v) && Number.isSafeInteger(v) && v >= 0;
const share: Rule = (v) => num(v) && v > 0 && v <= 1;
const posFinite: Rule = (v) => num(v) && Number.isFinite(v) && v > 0;
const capOrZero: Rule = (v) => v === 0 || posIntOrInf(v);
const prefixBits: Rule = (v) => num(v) && Number.isInteger(v) && v >= 1 && v <= 128;
const isPlainObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Any value a config file, an env parser or a typo could produce. Never undefined (that is
 * "use the default"), nor null: null has a test of its own below, so that one systemic answer
 * does not fail every knob at once.
 */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.double(),
  fc.constantFrom(0, -0, 1, 2, 0.5, 1.5, -1, Infinity, -Infinity, NaN, 2 ** 53, 2 ** 53 - 1, 2 ** 53 + 2, 1e21, 25_000, 20_000, 128, 129),
  fc.string({ maxLength: 12 }),
  fc.constantFrom("10", "Infinity", "", "0", "false", "true", "timer"),
  fc.boolean(),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
  fc.array(fc.nat(), { maxLength: 3 }),
  fc.object({ maxDepth: 1 }),
);

const quiet = { log: () => {}, loadMonitor: false } as const;
/** Builds a guard and disposes it (the load monitor's probe, if any, must not outlive the run). */
const guardWith = (options: GuardOptions) => () => createGuard({ ...quiet, ...options }).dispose();

interface Knob {
  readonly name: string;
  /** The field name the error message must quote. */
  readonly field: string;
  readonly valid: Rule;
  /** A cross-field rule the value must also meet; its refusal must name the field too. */
  readonly fits?: Rule;
  readonly build: (v: unknown) => () => unknown;
}

const knobs: Knob[] = [
  ...(["maxConnections", "bodyLimitBytes"] as const).map((field): Knob => ({
    name: field,
    field,
    valid: posIntOrInf,
    build: (v) => guardWith({ [field]: v }),
  })),
  // A number, or the adaptive limiter's options (an object: a field it does not have is refused,
  // one left undefined is taken).
  {
    name: "concurrencyLimit",
    field: "concurrencyLimit",
    valid: (v) => posIntOrInf(v) || (typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => x === undefined)),
    build: (v) => guardWith({ concurrencyLimit: v as number }),
  },
  // The default drain window is 25 s and the default request timeout 20 s: one must stay below the other.
  { name: "requestTimeoutMs", field: "requestTimeoutMs", valid: posIntOrInf, fits: (v) => v === Infinity || (v as number) < 25_000, build: (v) => guardWith({ requestTimeoutMs: v as number }) },
  { name: "drainTimeoutMs", field: "drainTimeoutMs", valid: posIntOrInf, fits: (v) => (v as number) > 20_000, build: (v) => guardWith({ drainTimeoutMs: v as number }) },
  { name: "shedWaitMs", field: "shedWaitMs", valid: nonNegInt, build: (v) => guardWith({ shedWaitMs: v as number }) },
  // Up to the default shedWaitMs (500): past it the value is valid alone but not with it.
  { name: "standingWaitMs", field: "standingWaitMs", valid: nonNegInt, fits: (v) => (v as number) <= 500, build: (v) => guardWith({ standingWaitMs: v as number }) },
  { name: "memory.ceilingBytes", field: "ceilingBytes", valid: posInt, build: (v) => guardWith({ memory: { ceilingBytes: v as number } }) },
  { name: "memory.intervalMs", field: "intervalMs", valid: posInt, build: (v) => guardWith({ memory: { ceilingBytes: 1e9, intervalMs: v as number } }) },
  {
    name: "memory.resumeBelowBytes",
    field: "resumeBelowBytes",
    valid: posInt,
    fits: (v) => (v as number) <= 1e9,
    build: (v) => guardWith({ memory: { ceilingBytes: 1e9, resumeBelowBytes: v as number } }),
  },
  ...(["sampleIntervalMs", "deferAboveMs", "retryAfterMs"] as const).map((field): Knob => ({
    name: `loadMonitor.${field}`,
    field,
    valid: posInt,
    build: (v) => guardWith({ loadMonitor: { [field]: v } }),
  })),
  { name: "loadMonitor.highWatermarkMs", field: "highWatermarkMs", valid: posInt, fits: (v) => (v as number) > 15, build: (v) => guardWith({ loadMonitor: { highWatermarkMs: v as number } }) },
  { name: "loadMonitor.lowWatermarkMs", field: "lowWatermarkMs", valid: posInt, fits: (v) => (v as number) < 40, build: (v) => guardWith({ loadMonitor: { lowWatermarkMs: v as number } }) },
  { name: "loadMonitor.idleAfterMs", field: "idleAfterMs", valid: posIntOrInf, build: (v) => guardWith({ loadMonitor: { idleAfterMs: v as number } }) },
  { name: "loadMonitor.maxBatchMs", field: "maxBatchMs", valid: posIntOrInf, build: (v) => guardWith({ loadMonitor: { maxBatchMs: v as number } }) },
  ...(["minAdmitShare", "smoothing", "recoveryStep"] as const).map((field): Knob => ({
    name: `loadMonitor.${field}`,
    field,
    valid: share,
    build: (v) => guardWith({ loadMonitor: { [field]: v } }),
  })),
  ...(["perKey", "overall"] as const).map((field): Knob => ({
    name: `inFlightPerKey.${field}`,
    field,
    valid: capOrZero, // 0 is clamped to 1 (documented)
    build: (v) => guardWith({ inFlightPerKey: { [field]: v } }),
  })),
  { name: "inFlightPerKey.shedWaitMs", field: "shedWaitMs", valid: nonNegInt, build: (v) => guardWith({ inFlightPerKey: { shedWaitMs: v as number } }) },
  ...(["maxKeys", "retryAfterMs"] as const).map((field): Knob => ({
    name: `inFlightPerKey.${field}`,
    field,
    valid: posInt,
    build: (v) => guardWith({ inFlightPerKey: { [field]: v } }),
  })),
  ...(["limit", "windowMs", "maxKeys"] as const).map((field): Knob => ({
    name: `fixed window ${field}`,
    field,
    valid: posInt,
    build: (v) => () => createFixedWindowLimiter({ [field]: v }),
  })),
  // A bucket whose burst would take more than 1e12 ms to refill is refused too (burst × 1000 ÷ rate).
  { name: "token bucket ratePerSecond", field: "ratePerSecond", valid: (v) => posFinite(v) && 1000 / (v as number) <= 1e12, build: (v) => () => createTokenBucketLimiter({ ratePerSecond: v as number, burst: 1 }) },
  { name: "token bucket burst", field: "burst", valid: (v) => posInt(v) && (v as number) * 1000 <= 1e12, build: (v) => () => createTokenBucketLimiter({ ratePerSecond: 1, burst: v as number }) },
  {
    name: "clientKey.ipv6Prefix (through a guard with a rate limit)",
    field: "ipv6Prefix",
    valid: prefixBits,
    build: (v) => guardWith({ clientKey: { ipv6Prefix: v as number }, rateLimits: [{ limiter: createFixedWindowLimiter() }] }),
  },
  {
    name: "clientKey.proxyHeader",
    field: "proxyHeader",
    valid: (v) => v === "x-forwarded-for" || v === "forwarded",
    build: (v) => () => createClientKey({ proxyHeader: v as "forwarded" }),
  },
  { name: "clientKey.unknownKey", field: "unknownKey", valid: (v) => typeof v === "string", build: (v) => () => createClientKey({ unknownKey: v as string }) },
  {
    name: "preStopDelayMs",
    field: "preStopDelayMs",
    valid: nonNegInt,
    // A request admitted at the delay's end must reach its deadline inside the window: delay + 1000 < 5000.
    fits: (v) => (v as number) < 4000,
    build: (v) => () => validateLifecycle({ requestTimeoutMs: 1000, drainTimeoutMs: 5000, preStopDelayMs: v as number }),
  },
  {
    name: "platformGraceMs",
    field: "platformGraceMs",
    valid: posInt,
    fits: (v) => (v as number) >= 7000, // drain 5000 + flush margin 2000 must fit
    build: (v) => () => validateLifecycle({ requestTimeoutMs: 1000, drainTimeoutMs: 5000, platformGraceMs: v as number }),
  },
  {
    name: "flushMarginMs",
    field: "flushMarginMs",
    valid: nonNegInt,
    build: (v) => () => validateLifecycle({ requestTimeoutMs: 1000, drainTimeoutMs: 5000, flushMarginMs: v as number }),
  },
];

/** Runs `build`; asserts the outcome the rule predicts. */
function check(knob: Knob, value: unknown): void {
  // Every duration (a field named …Ms) stops at 2^31 - 1 ms, the longest delay a timer takes.
  const overTimer = knob.field.endsWith("Ms") && typeof value === "number" && Number.isFinite(value) && value > 2 ** 31 - 1;
  const acceptable = knob.valid(value) && (knob.fits?.(value) ?? true) && !overTimer;
  let thrown: unknown;
  try {
    knob.build(value)();
  } catch (error) {
    thrown = error;
  }
  const shown = typeof value === "bigint" ? `${value}n` : (() => {
    try {
      return JSON.stringify(value) ?? String(value);
    } catch {
      return String(value);
    }
  })();
  if (acceptable) {
    assert.equal(thrown, undefined, `${knob.name} = ${shown} is valid but was refused: ${String(thrown)}`);
    return;
  }
  assert.ok(thrown !== undefined, `${knob.name} = ${shown} (${typeof value}) is invalid but was accepted`);
  assert.ok(thrown instanceof RangeError || thrown instanceof TypeError, `${knob.name} = ${shown}: threw ${String(thrown)}`);
  // The field, or a key inside it that it does not have ("concurrencyLimit.maxlimit").
  const message = (thrown as Error).message;
  assert.ok(message.includes(`"${knob.field}"`) || message.includes(`"${knob.field}.`), `${knob.name} = ${shown}: the message does not name "${knob.field}": ${message}`);
}

/** Every header value a runtime could hand over: latin-1 without CR, LF, NUL. */
const fieldText = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    fc.constantFrom("\t", ",", ";", "=", '"', "[", "]", ":", " ", "%", "\x7f"),
    fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 60,
});
const ipv4 = fc.ipV4();
const trustedV4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)).map(([a, b, c]) => `10.${a}.${b}.${c}`);
const ipToken = fc.oneof(
  ipv4,
  trustedV4,
  fc.ipV6(),
  fc.ipV6().map((a) => `[${a}]:${443}`),
  ipv4.map((a) => `${a}:8080`),
  ipv4.map((a) => `::ffff:${a}`),
  fc.constantFrom("unknown", "_hidden", "", " ", "2001:db8::1%eth0", "999.1.1.1", "1.2.3", "::", "[::1]"),
  fieldText,
);
const listOf = (token: fc.Arbitrary<string>) =>
  fc.array(fc.tuple(token, fc.constantFrom("", " ", "  ", "\t")), { maxLength: 5 }).map((parts) => parts.map(([t, pad]) => pad + t + pad).join(","));
const forwardedElement = fc.oneof(
  ipToken.map((t) => `for=${t}`),
  ipToken.map((t) => `for="${t}"`),
  fc.tuple(ipToken, fieldText).map(([t, x]) => `for=${t};proto=https;by=${x}`),
  fieldText,
);
const contentLength = fc.oneof(
  fc.nat().map(String),
  fc.bigInt({ min: 0n, max: 10n ** 22n }).map(String),
  fc.array(fc.nat(200).map(String), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(", ")),
  fc.constantFrom("abc", "-1", "", "1e3", "99999999999999999999", "3, 5", "5,5", " 7 ", "+1", "0x10", "1.0", "9007199254740991", "9007199254740992"),
  fieldText,
);
const peerAddress = fc.option(fc.oneof(ipv4, trustedV4, fc.ipV6(), ipv4.map((a) => `::ffff:${a}`), fc.constantFrom("127.0.0.1", "10.0.0.1", "::1", "2001:db8::7"), fieldText), { nil: undefined });

const CAP = 64;
const TRUSTED = ["10.0.0.0/8", "2001:db8::/32", "127.0.0.1"];

/** The guard's framing rules, written out independently: what status the request must get. */
function expectedStatus(headers: Headers, bodyBytes: number | null): number {
  const cl = headers.get("content-length");
  const counted = (bodyBytes ?? 0) > CAP ? 413 : 200;
  // No body (GET): no framing to check, whatever the header says (guard.ts: a malformed
  // length on such a request is the runtime parser's to refuse; its declared length is
  // checked only when an adapter says the head declares a body).
  if (bodyBytes === null) return 200;
  if (cl === null || headers.has("transfer-encoding")) return counted;
  let n: number | undefined;
  for (const part of cl.split(",")) {
    const v = part.trim();
    if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v)) || (n !== undefined && Number(v) !== n)) return 400;
    n = Number(v);
  }
  return n! > CAP ? 413 : counted;
}

describe(`reliability (${runtime}): config and header fuzzing`, () => {
  for (const knob of knobs) {
    test(`reliability (${runtime}): config ${knob.name} — every value is accepted as given or refused with a RangeError/TypeError naming "${knob.field}"`, () => {
      fc.assert(fc.property(anyValue, (v) => check(knob, v)), { numRuns: 150 });
    });
  }

  // resolveConfig documents null as refused ("0, negatives, NaN, fractions, strings, null");
  // every other factory should agree rather than read null as "use the default".
  test(`reliability (${runtime}): config null is refused like any other non-number by every knob, not read as its default`, () => {
    const acceptsNull: string[] = [];
    for (const knob of knobs) {
      try {
        knob.build(null)();
        acceptsNull.push(knob.name);
      } catch (error) {
        assert.ok(error instanceof RangeError || error instanceof TypeError, `${knob.name}: ${String(error)}`);
        assert.ok((error as Error).message.includes(`"${knob.field}"`), `${knob.name}: ${(error as Error).message}`);
      }
    }
    assert.deepEqual(acceptsNull, [], "knobs that accept null and silently use their default");
  });

  test(`reliability (${runtime}): config options that are not an object → TypeError (createGuard, createClientKey, the limiters)`, () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.nat(), { maxLength: 2 })), (v) => {
        for (const build of [() => createGuard(v as never), () => createClientKey(v as never), () => createFixedWindowLimiter(v as never)]) {
          assert.throws(build, TypeError);
        }
      }),
    );
  });

  test(`reliability (${runtime}): config clientKey.trustedProxies — valid CIDR lists are accepted, anything else refused with a RangeError/TypeError naming "trustedProxies"`, () => {
    const cidr = fc.oneof(ipv4.map((a) => `${a}/${a.length % 33}`), fc.ipV6().map((a) => `${a}/64`), ipv4, fc.ipV6());
    fc.assert(fc.property(fc.array(cidr, { maxLength: 4 }), (list) => void createClientKey({ trustedProxies: list })));
    fc.assert(
      fc.property(fc.oneof(anyValue, fc.array(fc.oneof(cidr, fieldText, anyValue), { minLength: 1, maxLength: 3 })), (v) => {
        try {
          createClientKey({ trustedProxies: v as string[] });
        } catch (error) {
          assert.ok(error instanceof RangeError || error instanceof TypeError, String(error));
          assert.match((error as Error).message, /"trustedProxies"/);
          return;
        }
        // Accepted: it must have been a list of address strings.
        assert.ok(Array.isArray(v) && v.every((x) => typeof x === "string"), `accepted ${JSON.stringify(v)}`);
      }),
    );
  });

  test(`reliability (${runtime}): config rateLimits — a non-array, or rules without a limiter, are refused with a TypeError naming the field`, () => {
    fc.assert(
      fc.property(anyValue, (v) => {
        const bad = Array.isArray(v) ? (v.length > 0 ? v : undefined) : v;
        if (bad === undefined) return; // [] is a valid (empty) list
        assert.throws(() => createGuard({ ...quiet, rateLimits: bad as never }).dispose(), (error: unknown) => {
          assert.ok(error instanceof TypeError || error instanceof RangeError, String(error));
          assert.match((error as Error).message, /"rateLimits"|limiter|"scopes"|"name"/);
          return true;
        });
      }),
    );
  });

  // The knobs that take an object of options (or, for loadMonitor, a boolean): a value of
  // another type is a config mistake ("false" from an env file, a number, null) and must be
  // refused, not spread as if it were an empty options object.
  test(`reliability (${runtime}): config loadMonitor, inFlightPerKey and memory of the wrong type → refused with a TypeError/RangeError naming the field, never read as defaults`, () => {
    const shapes: [string, (v: unknown) => boolean, (v: unknown) => GuardOptions, RegExp][] = [
      ["loadMonitor", (v) => typeof v === "boolean" || isPlainObject(v), (v) => ({ loadMonitor: v as boolean }), /"loadMonitor"/],
      ["inFlightPerKey", isPlainObject, (v) => ({ inFlightPerKey: v as object }), /"inFlightPerKey"/],
      ["memory", (v) => isPlainObject(v) && posInt((v as { ceilingBytes?: unknown }).ceilingBytes), (v) => ({ memory: v as never }), /"memory"|"ceilingBytes"/],
    ];
    const wrongType = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("false", "true", "timer", "off"), fc.integer(), fc.constant(null), fc.array(fc.nat(), { maxLength: 2 }));
    const accepted: Record<string, string[]> = {};
    for (const [field, ok, options, names] of shapes) {
      fc.assert(
        fc.property(wrongType, (v) => {
          if (ok(v)) return;
          try {
            createGuard({ ...quiet, ...options(v) }).dispose();
          } catch (error) {
            assert.ok(error instanceof TypeError || error instanceof RangeError, String(error));
            assert.match((error as Error).message, names);
            return;
          }
          const seen = (accepted[field] ??= []);
          const shown = JSON.stringify(v);
          if (seen.length < 6 && !seen.includes(shown)) seen.push(shown);
        }),
      );
    }
    assert.deepEqual(accepted, {}, "invalid values accepted (and read as defaults), a sample per field");
  });

  for (const proxyHeader of ["x-forwarded-for", "forwarded"] as const) {
    test(`reliability (${runtime}): headers (${proxyHeader}) — no Content-Length, Transfer-Encoding, ${proxyHeader} value or peer address makes the guard throw; the answer is 200/400/413 as the framing rules say; an untrusted peer's key ignores the header`, async () => {
      const clock = createManualClock();
      const guard = createGuard({
        ...quiet,
        clock,
        bodyLimitBytes: CAP,
        concurrencyLimit: Infinity,
        clientKey: { trustedProxies: TRUSTED, proxyHeader },
        rateLimits: [{ limiter: createFixedWindowLimiter({ limit: 1_000_000_000, clock }) }],
        inFlightPerKey: { perKey: 1_000 },
      });
      const keyOf = createClientKey({ trustedProxies: TRUSTED, proxyHeader });
      const fetch = guard.wrap(async (request, { context }) => {
        const bytes = (await request.arrayBuffer()).byteLength;
        return Response.json({ bytes, key: context.key });
      });
      const proxyValue = proxyHeader === "forwarded" ? listOf(forwardedElement) : listOf(ipToken);
      try {
        await fc.assert(
          fc.asyncProperty(
            fc.record({
              cl: fc.option(contentLength, { nil: undefined }),
              te: fc.option(fc.oneof(fc.constantFrom("chunked", "gzip, chunked", "identity", ""), fieldText), { nil: undefined }),
              proxy: fc.option(fc.oneof(proxyValue, fieldText), { nil: undefined }),
              peer: peerAddress,
              body: fc.option(fc.nat(200), { nil: null }),
            }),
            async ({ cl, te, proxy, peer, body }) => {
              let headers: Headers;
              try {
                headers = new Headers();
                if (cl !== undefined) headers.set("content-length", cl);
                if (te !== undefined) headers.set("transfer-encoding", te);
                if (proxy !== undefined) headers.set(proxyHeader, proxy);
              } catch {
                return; // not a valid field value: no runtime would hand it over
              }
              const request = new Request("http://localhost/upload", {
                method: body === null ? "GET" : "POST",
                headers,
                ...(body === null ? {} : { body: "x".repeat(body) }),
              });
              let res: Response;
              try {
                res = await fetch(request, peer === undefined ? undefined : { peer: { address: peer } });
              } catch (error) {
                assert.fail(`the guard threw instead of answering: ${String(error)}`);
              }
              assert.equal(res.status, expectedStatus(headers, body), `cl=${JSON.stringify(cl)} te=${JSON.stringify(te)} body=${body}`);
              if (res.status !== 200) return void (await res.body?.cancel());
              const seen = (await res.json()) as { bytes: number; key: string };
              assert.ok(seen.bytes <= CAP);
              assert.equal(typeof seen.key, "string");
              const bare = keyOf({ headers: new Headers() }, peer === undefined ? undefined : { peer: { address: peer } });
              const peerTrusted = bare !== keyOf({ headers: new Headers() }, { peer: { address: "198.51.100.1" } }) &&
                /^(10\.|127\.0\.0\.1$|2001:db8:)/.test(bare);
              if (!peerTrusted) assert.equal(seen.key, bare, `an untrusted peer (${peer}) was keyed by its ${proxyHeader} header`);
            },
          ),
          { numRuns: 400 },
        );
        assert.equal(guard.inFlight, 0, "a permit outlived its request");
      } finally {
        guard.dispose();
      }
    });
  }

  test(`reliability (${runtime}): the guard's own framing gate (in-process, where no runtime parser intervenes) answers 400 to the issue's Content-Length values and never runs the handler`, async () => {
    const guard = createGuard({ ...quiet, bodyLimitBytes: CAP });
    let ran = 0;
    const fetch = guard.wrap(async (request) => {
      ran++;
      await request.arrayBuffer();
      return new Response("ok");
    });
    try {
      for (const cl of ["abc", "-1", "", "1e3", "99999999999999999999", "3, 5"]) {
        const res = await fetch(new Request("http://localhost/", { method: "POST", body: "abc", headers: { "content-length": cl } }));
        assert.equal(res.status, 400, `Content-Length: ${JSON.stringify(cl)}`);
        assert.equal(await res.text(), "Bad Request");
      }
      const both = await fetch(new Request("http://localhost/", { method: "POST", body: "x".repeat(CAP + 1), headers: { "content-length": "3", "transfer-encoding": "chunked" } }));
      assert.equal(both.status, 413, "with Transfer-Encoding the length is ignored and the bytes counted");
      assert.equal(ran, 1);
      assert.equal(guard.inFlight, 0);
    } finally {
      guard.dispose();
    }
  });
});
