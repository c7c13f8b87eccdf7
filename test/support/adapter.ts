// The adapter of the runtime the suite runs under (tests may sniff; the library never does).
import type { GuardedHandler, ServeHandle, ServeOptions } from "../../src/core/mod.ts";
import { runtime } from "./runtime.ts";

/** The `serve` of this runtime's adapter. */
export async function adapterHere(): Promise<(handler: GuardedHandler, options?: ServeOptions) => Promise<ServeHandle>> {
  if (runtime === "deno") return (await import("../../src/adapters/deno/mod.ts")).serve;
  if (runtime === "bun") return (await import("../../src/adapters/bun/mod.ts")).serve;
  return (await import("../../src/adapters/node/mod.ts")).serve;
}

/** Serves quietly on port 0 with this runtime's adapter. */
export async function serveHere(handler: GuardedHandler, options: ServeOptions = {}): Promise<ServeHandle> {
  // The load monitor has its own tests; here it would only make a busy CI box shed.
  return (await adapterHere())(handler, { log: () => {}, port: 0, loadMonitor: false, ...options });
}
