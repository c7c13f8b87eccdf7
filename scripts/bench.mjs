#!/usr/bin/env node
// `npm run bench [-- file-filter]`: runs every bench/*.bench.ts on Node, Deno and Bun in
// turn. Not part of `npm test`: timing belongs here, never in a test.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const filter = process.argv[2] ?? "";
const files = readdirSync(join(root, "bench")).filter((f) => f.endsWith(".bench.ts") && f.includes(filter)).sort();
const runtimes = {
  node: (f) => [process.execPath, ["--import", "tsx", f]],
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
process.exit(failed ? 1 : 0);
