import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { repoRoot, runtime } from "./support/runtime.ts";

// Packaging does not depend on the runtime that runs the suite, but the suite runs the
// same everywhere: each runtime builds with tsc and asks npm what it would publish.
describe("package", () => {
  test(`package: npm pack lists only dist, README, LICENSE and package.json (${runtime})`, () => {
    execFileSync("node", ["scripts/build.mjs"], { cwd: repoRoot, stdio: "pipe" });
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: repoRoot, encoding: "utf8" });
    const files: string[] = JSON.parse(out)[0].files.map((f: { path: string }) => f.path);
    const stray = files.filter((f) => !/^(dist\/.+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/.test(f));
    assert.deepEqual(stray, []);
    for (const must of ["README.md", "LICENSE", "package.json", "dist/mod.js", "dist/mod.d.ts", "dist/adapters/node/mod.js"]) {
      assert.ok(files.includes(must), must);
    }
  });
});
