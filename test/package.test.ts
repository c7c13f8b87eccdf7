import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { repoRoot, runtime } from "./support/runtime.ts";
import { exportNames, PUBLIC_SURFACE } from "./support/surface.ts";

// Packaging does not depend on the runtime that runs the suite, but the suite runs the
// same everywhere: each runtime builds with tsc and asks npm what it would publish.
let packedFiles: string[] | undefined;
function packed(): string[] {
  if (packedFiles !== undefined) return packedFiles;
  execFileSync("node", ["scripts/build.mjs"], { cwd: repoRoot, stdio: "pipe" });
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: repoRoot, encoding: "utf8" });
  return (packedFiles = JSON.parse(out)[0].files.map((f: { path: string }) => f.path));
}

describe("package", () => {
  test(`package: npm pack lists only dist, README, LICENSE and package.json (${runtime})`, { timeout: 60_000 }, () => {
    const files = packed();
    const stray = files.filter((f) => !/^(dist\/.+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/.test(f));
    assert.deepEqual(stray, []);
    for (const must of ["README.md", "LICENSE", "package.json", "dist/mod.js", "dist/mod.d.ts", "dist/adapters/node/mod.js"]) {
      assert.ok(files.includes(must), must);
    }
  });

  test(`package: every npm export is packed and its built module exports exactly the pinned names (${runtime})`, { timeout: 60_000 }, async () => {
    const files = packed();
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, { types: string; default: string }> };
    assert.deepEqual(Object.keys(pkg.exports).sort(), Object.keys(PUBLIC_SURFACE).sort());
    for (const [key, entry] of Object.entries(pkg.exports)) {
      for (const file of [entry.types, entry.default]) assert.ok(files.includes(file.replace(/^\.\//, "")), `${key}: ${file} is packed`);
      const mod = await import(pathToFileURL(join(repoRoot, entry.default)).href);
      assert.deepEqual(exportNames(mod), PUBLIC_SURFACE[key], key);
    }
  });
});
