// The example's first step, before anything else is loaded: until serve() installs its own
// handling, a stop signal ends startup with exit 0 (nothing is admitted yet). As a container's
// PID 1 a signal with no handler is ignored: a SIGTERM while the modules load (up to ~1 s on
// Node) or during the Redis connect (up to 5 s) was lost — the server came up and served until
// the SIGKILL (a review). No imports: this runs as soon as the runtime starts the entry.
/** The runtime the example finds itself on (the library never sniffs; the example picks the adapter). */
export const runtime: "deno" | "bun" | "node" = typeof Deno !== "undefined" ? "deno" : "Bun" in globalThis ? "bun" : "node";

const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;
const exit = (code: number): never => (runtime === "deno" ? Deno.exit(code) : process.exit(code));
const stopStartup = () => exit(0);

/** Installs the startup stop: a stop signal from now until {@linkcode endStartup} exits 0. */
export function beginStartup(): void {
  for (const signal of STOP_SIGNALS) runtime === "deno" ? Deno.addSignalListener(signal, stopStartup) : process.on(signal, stopStartup);
  const pid = runtime === "deno" ? Deno.pid : process.pid;
  console.log(JSON.stringify({ time: new Date().toISOString(), level: "info", msg: "starting", pid, runtime }));
}

/** Removes the startup stop, right before serve() installs its own handling (synchronously, as it is called). */
export function endStartup(): void {
  for (const signal of STOP_SIGNALS) runtime === "deno" ? Deno.removeSignalListener(signal, stopStartup) : process.off(signal, stopStartup);
}
