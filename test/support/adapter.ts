// The adapter of the runtime the suite runs under (tests may sniff; the library never does).
import type { GuardedHandler, ServeHandle, ServeOptions } from "../../src/core/mod.ts";
import { runtime } from "./runtime.ts";

export async function serveHere(handler: GuardedHandler, options: ServeOptions = {}): Promise<ServeHandle> {
  // The load monitor has its own tests; here it would only make a busy CI box shed.
  const quiet = { log: () => {}, port: 0, loadMonitor: false, ...options };
  if (runtime === "deno") return (await import("../../src/adapters/deno/mod.ts")).serve(handler, quiet);
  if (runtime === "bun") return (await import("../../src/adapters/bun/mod.ts")).serve(handler, quiet);
  return (await import("../../src/adapters/node/mod.ts")).serve(handler, quiet);
}
