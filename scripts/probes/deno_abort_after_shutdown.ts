// Probe (Deno): can a started graceful shutdown be escalated by aborting Deno.serve's
// `signal`? Run: deno run -A scripts/probes/deno_abort_after_shutdown.ts
// Measured on deno 2.9.6: no — the abort throws "BadResource: Bad resource ID" from inside
// Deno's own abort listener; it is not caught by the try/catch around abort() and ends the
// process with exit 1. So the library never aborts it: a forced drain on Deno answers the
// stuck requests and fails the open bodies instead (scripts/probes/deno_forced_drain.ts).
const ac = new AbortController();
const server = Deno.serve({ port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} }, () => new Promise<Response>(() => {}));
const stuck = fetch(`http://127.0.0.1:${server.addr.port}/`).catch((e) => e);
await new Promise((r) => setTimeout(r, 200));
void server.shutdown();
await new Promise((r) => setTimeout(r, 200));
globalThis.addEventListener("unload", () => console.log("probe: the process is ending (exit code set by Deno)"));
console.log("probe: aborting the serve signal after shutdown()");
try {
  ac.abort();
  console.log("probe: abort() returned");
} catch (error) {
  console.log(`probe: abort() threw and was caught: ${error}`);
}
await new Promise((r) => setTimeout(r, 200));
console.log("probe: still running 200 ms later: the abort did not crash the process");
void stuck;
Deno.exit(0);
