// The admission path's cost in process: guard.wrap(handler) with every gate on and none
// tripping, against the bare handler.
import { createSystemClock, type Host } from "../src/core/mod.ts";
import { createGuard } from "../src/core/guard.ts";
import { measureAsync, report } from "./_harness.ts";

const request = new Request("http://localhost/");
const handler = () => new Response("hello");
const bare = (_r: Request) => Promise.resolve(handler());

// A Host whose RSS is far below the ceiling and whose signals never fire: every gate is on.
const host: Host = {
  clock: createSystemClock(),
  rss: () => 50_000_000,
  onShutdownSignal: () => () => {},
};
const stop = new AbortController();
const all = () =>
  createGuard(
    {
      concurrencyLimit: 1024,
      requestTimeoutMs: 20_000,
      bodyLimitBytes: 1 << 20,
      memory: { ceilingBytes: 1 << 30 },
      loadMonitor: true,
      shutdown: stop,
    },
    host,
  );
const wheelGuard = all();
const wheel = wheelGuard.wrap(handler);

// A server's requests arrive as I/O events, so timers (the load monitor's probe, the
// deadline wheel) run between them. A loop of awaits alone never yields to timers — the
// probe would rightly see a stalled loop and shed — so every case yields to the macrotask
// queue every 256 calls, alike. Every answer must be a 200: a gate that trips is a failure.
// setImmediate (all three runtimes have it) turns the loop without the 1 ms clamp of setTimeout.
const macrotask = () => new Promise((resolve) => setImmediate(resolve));
const loop = (fn: (r: Request) => Promise<Response>) => async (n: number) => {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    if ((await fn(request)).status === 200) ok++;
    if ((i & 255) === 255) await macrotask();
  }
  if (ok !== n) throw new Error(`${n - ok} of ${n} calls were refused: a gate tripped`);
  return ok;
};

const results = await measureAsync(
  [
  { name: "bare handler", run: loop(bare) },
  { name: "guard, every gate on (deadline wheel)", run: loop(wheel) },
  ],
  { runs: 7 },
);
report("in-process calls", results, "bare handler");
wheelGuard.dispose();
