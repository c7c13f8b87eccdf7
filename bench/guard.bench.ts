// The admission path's cost in process: guard.wrap(handler) with every gate on and none
// tripping, against the bare handler.
import { createSystemClock, type Host } from "../src/core/mod.ts";
import { createGuard } from "../src/core/guard.ts";
import { answering, measureAsync, report } from "./_harness.ts";

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

const results = await measureAsync(
  [
  { name: "bare handler", run: answering(() => bare(request)) },
  { name: "guard, every gate on (deadline wheel)", run: answering(() => wheel(request)) },
  ],
  { runs: 7 },
);
report("in-process calls", results, "bare handler");
wheelGuard.dispose();
