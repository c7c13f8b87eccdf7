// Deno's node:cluster: a worker its primary signals (`worker.process.kill("SIGTERM")`) is
// reported by the primary's "exit" event as killed at once, while the worker, which caught the
// signal, is still running (draining). A primary that waits for its workers' exits before it
// exits itself therefore leaves at once on Deno. Node and Bun report the real exit.
//
//   deno run -A scripts/probes/deno_cluster_kill.ts
// Measured (Deno 2.9.6): "worker: got SIGTERM", then "primary: exit event null SIGTERM at
// +2 ms"; the worker's own exit with 5, 100 ms later, is never reported. Node 20 and Bun 1.4:
// "exit event 5 null at +106 ms" / "+102 ms".
import cluster from "node:cluster";
import process from "node:process";

if (cluster.isPrimary) {
  const worker = cluster.fork();
  let killedAt = 0;
  worker.on("message", () => {
    killedAt = performance.now();
    worker.process.kill("SIGTERM");
  });
  cluster.on("exit", (_w, code, signal) => {
    console.log(`primary: exit event ${code} ${signal} at +${Math.round(performance.now() - killedAt)} ms`);
    setTimeout(() => process.exit(0), 300);
  });
  setTimeout(() => process.exit(9), 5_000).unref();
} else {
  process.on("SIGTERM", () => {
    console.log("worker: got SIGTERM");
    setTimeout(() => {
      console.log("worker: exiting with 5");
      process.exit(5);
    }, 100);
  });
  process.send!({ ready: true });
  setInterval(() => {}, 1_000);
}
