// A tiny in-process benchmark harness that runs unchanged on Node, Deno and Bun: each case
// is timed over several runs and the median ns/op is reported, with ratios computed from
// cases measured side by side in the same process.

export interface BenchCase {
  name: string;
  /** Runs the operation `n` times; returns something so the work is not optimised away. */
  run(n: number): unknown;
}

export interface BenchResult {
  name: string;
  nsPerOp: number;
  runs: number[];
}

let sink: unknown;

export function measure(cases: BenchCase[], { ops = 1_000_000, runs = 5 } = {}): BenchResult[] {
  for (const c of cases) sink = c.run(Math.min(ops, 100_000)); // warm up
  const results = cases.map((c) => ({ name: c.name, nsPerOp: 0, runs: [] as number[] }));
  // Interleave cases run by run, so drift in machine load hits all of them alike.
  for (let r = 0; r < runs; r++) {
    cases.forEach((c, i) => {
      const t0 = performance.now();
      sink = c.run(ops);
      results[i]!.runs.push(((performance.now() - t0) * 1e6) / ops);
    });
  }
  for (const res of results) res.nsPerOp = median(res.runs);
  return results;
}

/** Like {@linkcode measure} for asynchronous operations: `run(n)` awaits n operations in turn. */
export async function measureAsync(
  cases: { name: string; run(n: number): Promise<unknown> }[],
  { ops = 200_000, runs = 5 } = {},
): Promise<BenchResult[]> {
  for (const c of cases) sink = await c.run(Math.min(ops, 50_000));
  const results = cases.map((c) => ({ name: c.name, nsPerOp: 0, runs: [] as number[] }));
  for (let r = 0; r < runs; r++) {
    for (const [i, c] of cases.entries()) {
      const t0 = performance.now();
      sink = await c.run(ops);
      results[i]!.runs.push(((performance.now() - t0) * 1e6) / ops);
    }
  }
  for (const res of results) res.nsPerOp = median(res.runs);
  return results;
}

// A server's requests arrive as I/O events, so timers (the load monitor's probe, the
// deadline wheel) run between them. A loop of awaits alone never yields to timers — the
// probe would rightly see a stalled loop and shed — so every case yields to the macrotask
// queue every 256 calls, alike. setImmediate (all three runtimes have it) turns the loop
// without the 1 ms clamp of setTimeout.
const macrotask = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A case for {@linkcode measureAsync} that answers `call()` n times in turn, a turn of the event
 * loop every 256 calls. Every answer must be a 200: a gate that trips is a failure.
 */
export const answering = (call: () => Response | Promise<Response>) => async (n: number): Promise<number> => {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    if ((await call()).status === 200) ok++;
    if ((i & 255) === 255) await macrotask();
  }
  if (ok !== n) throw new Error(`${n - ok} of ${n} calls were refused: a gate tripped`);
  return ok;
};

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function runtimeName(): string {
  return typeof Deno !== "undefined" ? `deno ${Deno.version.deno}` : "Bun" in globalThis ? `bun ${process.versions.bun}` : `node ${process.version}`;
}

export function report(title: string, results: BenchResult[], baseline?: string): void {
  const base = results.find((r) => r.name === baseline);
  console.log(`\n${title} — ${runtimeName()} (median of ${results[0]?.runs.length} runs)`);
  for (const r of results) {
    const ratio = base ? `  ${(r.nsPerOp / base.nsPerOp).toFixed(2)}× the time of ${base.name} (rate ${(base.nsPerOp / r.nsPerOp).toFixed(2)})` : "";
    console.log(`  ${r.name.padEnd(44)} ${r.nsPerOp.toFixed(1).padStart(8)} ns/op${ratio}`);
  }
  void sink;
}
