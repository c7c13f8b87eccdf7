#!/usr/bin/env node
// Emits dist/ (.js + .d.ts) from src/. tsc rewrites relative `.ts` specifiers to `.js`
// in the JavaScript it emits but keeps them in declarations, which consumers without
// allowImportingTsExtensions cannot read; rewrite those too.
// `node scripts/build.mjs [--out DIR]`: dist/ by default; the consumer smoke test builds into
// a folder of its own so it never races a build of dist/ in a parallel test file.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const outAt = process.argv.indexOf("--out");
const dist = outAt > 0 ? resolve(process.argv[outAt + 1]) : join(root, "dist");
rmSync(dist, { recursive: true, force: true });
execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.build.json", "--outDir", dist], { cwd: root, stdio: "inherit" });

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith(".d.ts")) {
      const text = readFileSync(path, "utf8");
      const fixed = text.replace(/(from\s+|import\s*\(\s*)(["'])(\.{1,2}\/[^"']+)\.ts\2/g, "$1$2$3.js$2");
      if (fixed !== text) writeFileSync(path, fixed);
    }
  }
}
walk(dist);
