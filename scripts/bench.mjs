#!/usr/bin/env node
// `npm run bench [-- file-filter]`: runs every bench/*.bench.ts on Node, Deno and Bun in
// turn, then — with no filter, or with the filter "http" — the HTTP suite
// (bench/http/run.mjs, also `npm run bench:http [-- part …]`). Not part of `npm test`:
// timing belongs here, never in a test.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const filter = process.argv[2] ?? "";
const files = readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.ts") && f.includes(filter)).sort();
// Node runs the tsc-compiled JavaScript, like a user of dist/ would: through tsx, esbuild's
// keepNames wraps every closure made per call in Object.defineProperty (~100 ns each), which
// would bill the library for the test loader's cost.
const built = join(root, "node_modules", ".cache", "serve-hygiene-bench");
spawnSync(bin("tsc"), ["-p", "tsconfig.bench.json"], { cwd: root, stdio: "inherit" });
const runtimes = {
  node: (f) => [process.execPath, [join(built, f.replace(/\.ts$/, ".js"))]],
  deno: (f) => [bin("deno"), ["run", "-A", f]],
  bun: (f) => [bin("bun"), ["run", f]],
};
let failed = 0;
for (const file of files) {
  for (const [name, cmd] of Object.entries(runtimes)) {
    const [exe, args] = cmd(join("bench", file));
    console.log(`\n### ${file} on ${name}`);
    const r = spawnSync(exe, args, { cwd: root, stdio: "inherit", timeout: 10 * 60_000 });
    if (r.status !== 0) failed++;
  }
}
if (filter === "" || filter === "http") {
  console.log("\n### HTTP suite (bench/http/run.mjs)");
  const r = spawnSync(process.execPath, [join(root, "bench", "http", "run.mjs")], { cwd: root, stdio: "inherit", timeout: 40 * 60_000 });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
