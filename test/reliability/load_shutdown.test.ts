// Reliability: a bounded load with SIGTERM in the middle. Sixteen clients send requests
// back to back, each on a fresh connection (Connection: close, so every outcome belongs to one
// request and no keep-alive race muddies it), to a real child server; halfway through, the
// test sends the child a real SIGTERM. Then, per request:
//   - every request whose response head arrived got the whole response (no cut mid-response);
//   - every request the handler admitted (it printed its id) got 200 with its full body;
//   - every request sent after the child announced the drain got 503 (Connection: close) or
//     a refused connection — or, where it was accepted just as the listener closed, a
//     connection closed before any byte (no response started, nothing admitted);
//   - the process drains clean and exits 0.
// The issue asks for e.g. 10 s of load; 3.6 s is used so that the whole reliability
// directory stays inside its 60 s budget per runtime on a 2-core box. The invariants are per
// request, so a longer run adds requests, not coverage: ~1.8 s at concurrency 16 with 100 ms
// handlers is already a few hundred admitted requests, with ~16 in flight at the signal.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { runtime } from "../support/runtime.ts";
import { delay, openSock, parseResponse, records, startServer, within } from "../support/reliability.ts";

const CONCURRENCY = 16;
const LOAD_MS = 3600;
const SIGNAL_AT_MS = LOAD_MS / 2;
const HANDLER_MS = 100;
const BODY_BYTES = 16 * 1024;

type Outcome =
  | { kind: "answered"; status: number; body: string; retryAfter?: string | undefined; connection?: string | undefined }
  | { kind: "partial"; got: number; head: string }
  | { kind: "dropped" }
  | { kind: "refused"; code: string };

interface Sent {
  readonly id: string;
  /** Sent after the test had seen the child announce its drain. */
  readonly afterDrain: boolean;
  /** Its outcome was in before the test sent SIGTERM: steady state. */
  beforeSignal?: boolean;
  outcome?: Outcome;
}

/** One request on a fresh connection, read to the server's close. */
async function once(port: number, id: string): Promise<Outcome> {
  let sock;
  try {
    sock = await openSock(port);
  } catch (error) {
    return { kind: "refused", code: String((error as { code?: unknown }).code ?? error) };
  }
  try {
    sock.write(`GET /work?id=${id}&ms=${HANDLER_MS}&bytes=${BODY_BYTES} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    await within(sock.closed, `request ${id}: the server closing the connection`);
    const buf = sock.received();
    if (buf.length === 0) return { kind: "dropped" };
    const parsed = parseResponse(buf, true);
    if (parsed === undefined || !parsed.complete) return { kind: "partial", got: buf.length, head: buf.subarray(0, 200).toString("latin1") };
    return {
      kind: "answered",
      status: parsed.status,
      body: parsed.body,
      retryAfter: parsed.headers.get("retry-after"),
      connection: parsed.headers.get("connection"),
    };
  } finally {
    sock.destroy();
  }
}

describe(`reliability (${runtime}): load and shutdown`, () => {
  test(`reliability (${runtime}): ${LOAD_MS / 1000} s of load at concurrency ${CONCURRENCY} with SIGTERM at the midpoint → no admitted request fails, no response is cut, later requests get 503 or a refused connection, exit 0 clean`, { timeout: 60_000 }, async () => {
    const server = await startServer({ CONCURRENCY: "64", TIMEOUT_MS: "3000", DRAIN_MS: "5000" });
    const { child, port } = server;
    try {
      const sent: Sent[] = [];
      let drainSeen = false;
      let signalled = false;
      const start = Date.now();
      const client = async (c: number) => {
        for (let n = 0; Date.now() - start < LOAD_MS; n++) {
          const entry: Sent = { id: `c${c}-${n}`, afterDrain: drainSeen };
          sent.push(entry);
          entry.outcome = await once(port, entry.id);
          entry.beforeSignal = !signalled;
          // Do not spin on a closed port.
          if (entry.outcome.kind !== "answered") await delay(20);
        }
      };
      const clients = Promise.all(Array.from({ length: CONCURRENCY }, (_, c) => client(c)));
      await delay(SIGNAL_AT_MS);
      const admittedAtSignal = records(child, "admitted").length;
      signalled = true;
      child.kill("SIGTERM");
      await within(child.waitForLine(/"log":"draining"/), "the child announcing its drain");
      drainSeen = true;
      await within(clients, "the load clients", LOAD_MS + 15_000);
      const code = await within(child.exited, "the child's exit");

      const outcomes = sent.map((s) => s.outcome!);
      const tally: Record<string, number> = {};
      for (const o of outcomes) {
        const k = o.kind === "answered" ? `answered ${o.status}` : o.kind;
        tally[k] = (tally[k] ?? 0) + 1;
      }
      const summary = `outcomes ${JSON.stringify(tally)}`;

      // Real traffic on both sides of the signal.
      assert.ok(admittedAtSignal >= CONCURRENCY, `only ${admittedAtSignal} requests admitted before the signal; ${summary}`);
      assert.ok(sent.some((s) => s.afterDrain), `no request was sent after the drain began; ${summary}`);

      // 1. Nothing cut mid-response.
      const partial = sent.filter((s) => s.outcome!.kind === "partial");
      assert.deepEqual(partial.map((s) => [s.id, s.outcome]), [], summary);

      // 2. Every admitted request got its whole 200.
      const admitted = new Set(records(child, "admitted").map((r) => String(r.admitted)));
      const byId = new Map(sent.map((s) => [s.id, s.outcome!]));
      const failedAdmitted = [...admitted].filter((id) => {
        const o = byId.get(id);
        return !(o?.kind === "answered" && o.status === 200 && o.body.length === BODY_BYTES && o.body.startsWith(`${id}:`));
      });
      assert.deepEqual(failedAdmitted.map((id) => [id, byId.get(id)]), [], summary);

      // 2b. Steady state: everything finished before the signal was served, none dropped.
      const steady = sent.filter((s) => s.beforeSignal);
      assert.ok(steady.length >= CONCURRENCY, summary);
      for (const s of steady) {
        assert.ok(s.outcome!.kind === "answered" && s.outcome!.status === 200, `${s.id} before the signal: ${JSON.stringify(s.outcome)}`);
      }

      // 3. Answers are 200 (admitted) or 503 with Retry-After (refused), nothing else.
      for (const s of sent) {
        const o = s.outcome!;
        if (o.kind !== "answered") continue;
        if (o.status === 200) assert.ok(admitted.has(s.id), `${s.id} got 200 without being admitted`);
        else {
          assert.equal(o.status, 503, `${s.id}: ${JSON.stringify(o)}`);
          assert.match(o.retryAfter ?? "", /^[1-9][0-9]*$/);
          // A token list: node's adapter may send the guard's Connection: close plus its own
          // draining one ("close, close" observed) — legal, the same instruction twice.
          assert.match(o.connection ?? "", /^close(, close)*$/i, "a draining refusal closes the connection");
        }
      }

      // 4. After the drain began: refused, 503, or closed before any byte — never served, never cut.
      for (const s of sent.filter((x) => x.afterDrain)) {
        const o = s.outcome!;
        assert.ok(
          o.kind === "refused" || o.kind === "dropped" || (o.kind === "answered" && o.status === 503),
          `${s.id} was sent after the drain began and got ${JSON.stringify(o)}; ${summary}`,
        );
        if (o.kind === "refused") assert.equal(o.code, "ECONNREFUSED");
      }

      // 5. A clean drain and exit.
      assert.equal(code, 0, `exit code; stderr:\n${child.stderr()}`);
      const outcome = records(child, "outcome");
      assert.equal(outcome.length, 1, `stdout:\n${child.stdout().slice(-2000)}`);
      assert.equal((outcome[0]!.outcome as { outcome: string }).outcome, "clean");
      assert.equal((outcome[0]!.outcome as { stillRunning: number }).stillRunning, 0);
      assert.equal(records(child, "flushed").length, 1);
      // No listener is added per request to a shared signal (Node would warn past 10).
      assert.doesNotMatch(child.stderr(), /MaxListenersExceeded/);
    } finally {
      child.kill();
    }
  });
});
