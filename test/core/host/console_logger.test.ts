// The default logger writes one JSON object a line whatever a record holds: a logs review found
// records lost whole (JSON.stringify threw on a circular error or a BigInt, and the line was
// dropped: a handler throwing a circular object got its 500 and no log line) and causes dropped
// (fetch's "fetch failed" without its ECONNREFUSED).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { consoleLogger, type LogRecord } from "../../../src/core/host/host.ts";
import { runtime } from "../../support/runtime.ts";

function lines(records: LogRecord[]): { err: string[]; out: string[] } {
  const err: string[] = [];
  const out: string[] = [];
  const [e, l] = [console.error, console.log];
  console.error = (line: string) => void err.push(line);
  console.log = (line: string) => void out.push(line);
  try {
    for (const r of records) consoleLogger(r);
  } finally {
    [console.error, console.log] = [e, l];
  }
  return { err, out };
}

describe(`console logger (${runtime})`, () => {
  test("console logger: a circular error, a BigInt and an error's cause are written, one JSON object a line", () => {
    const circular = Object.assign(new Error("loop"), { self: undefined as unknown });
    circular.self = circular;
    const selfCaused = new Error("again");
    (selfCaused as { cause?: unknown }).cause = selfCaused;
    const shared = { host: "db", port: 5432 };
    const failed = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) });
    const { err, out } = lines([
      { level: "error", msg: "handler failed", error: circular },
      { level: "error", msg: "handler failed", error: selfCaused },
      { level: "warn", msg: "upstream", error: failed },
      { level: "info", msg: "big", bytes: 2n ** 70n },
      { level: "info", msg: "plain object error", error: { a: 1 } },
      { level: "info", msg: "shared", primary: shared, replica: shared, list: [shared, shared] },
    ]);
    assert.equal(err.length, 3);
    assert.equal(out.length, 3);
    const parsed = [...err, ...out].map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(parsed[0], { level: "error", msg: "handler failed", error: { name: "Error", message: "loop" } });
    assert.deepEqual(parsed[1], { level: "error", msg: "handler failed", error: { name: "Error", message: "again", cause: "[circular]" } });
    assert.deepEqual(parsed[2], { level: "warn", msg: "upstream", error: { name: "TypeError", message: "fetch failed", cause: { name: "Error", message: "connect ECONNREFUSED 127.0.0.1:1" } } });
    assert.deepEqual(parsed[3], { level: "info", msg: "big", bytes: "1180591620717411303424" });
    assert.deepEqual(parsed[4], { level: "info", msg: "plain object error", error: { a: 1 } });
    // An object met twice, not inside itself, is written both times.
    assert.deepEqual(parsed[5], { level: "info", msg: "shared", primary: shared, replica: shared, list: [shared, shared] });
  });

  test("console logger: a record that cannot be written at all still gives its level and message", () => {
    const { err } = lines([{ level: "error", msg: "broken", error: { toJSON() { throw new Error("no"); } } }]);
    assert.deepEqual(err.map((line) => JSON.parse(line)), [{ level: "error", msg: "broken", unserializable: true }]);
  });
});
