// Memory readings and a forced collection on whichever runtime runs the file, for the
// reliability suite's heap and RSS assertions (tests only; the library reads RSS through
// its Host).
import v8 from "node:v8";
import vm from "node:vm";

/** Resident set size of this process, in bytes. */
export function residentBytes(): number {
  return typeof Deno !== "undefined" ? Deno.memoryUsage().rss : process.memoryUsage.rss();
}

/** Bytes of live JS heap (on Bun, JSC's figure, which includes array buffers). */
export function heapUsedBytes(): number {
  return typeof Deno !== "undefined" ? Deno.memoryUsage().heapUsed : process.memoryUsage().heapUsed;
}

let _gc: (() => void) | undefined | null = null;

function _findGc(): (() => void) | undefined {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === "function") return () => void exposed();
  const bun = (globalThis as { Bun?: { gc(sync: boolean): void } }).Bun;
  if (bun !== undefined) return () => bun.gc(true);
  try {
    // V8 (Node, Deno): turn the flag on at run time, then fetch `gc` from a fresh context.
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as unknown;
    if (typeof gc === "function") return () => void gc();
  } catch {
    // not available: callers fall back to repeated measurement
  }
  return undefined;
}

/** Runs a full collection where the runtime lets a test force one; returns whether it could. */
export function collectGarbage(): boolean {
  if (_gc === null) _gc = _findGc();
  if (_gc === undefined) return false;
  _gc();
  return true;
}

/**
 * How many of `refs` a forced full collection reclaims. WeakRef targets stay alive until the
 * current job ends, so this first lets the job end (one turn of the event loop, no sleeping).
 * Throws where the runtime gives no way to force a collection, rather than pass unchecked.
 * Count rather than require all: Bun's collector scans the stack conservatively, so a stray
 * pointer may keep one or two alive.
 */
export async function reclaimed(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 2; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    if (!collectGarbage()) throw new Error("this runtime gives the test no way to force a collection");
  }
  return refs.filter((r) => r.deref() === undefined).length;
}
