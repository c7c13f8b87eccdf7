import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { npmProject, packedFiles } from "./support/consumer.ts";
import { repoRoot, runtime } from "./support/runtime.ts";
import { exportNames, PUBLIC_SURFACE } from "./support/surface.ts";

// What npm would publish: the tarball itself (built and packed once per process by the
// consumer support, or the one CI built, named by SERVE_HYGIENE_TARBALL).
describe("package", () => {
  test(`package: the tarball holds only dist, README, LICENSE and package.json (${runtime})`, { timeout: 60_000 }, () => {
    const files = packedFiles();
    const stray = files.filter((f) => !/^(dist\/.+\.(js|d\.ts)|README\.md|LICENSE|package\.json)$/.test(f));
    assert.deepEqual(stray, []);
    for (const must of ["README.md", "LICENSE", "package.json", "dist/mod.js", "dist/mod.d.ts", "dist/adapters/node/mod.js"]) {
      assert.ok(files.includes(must), must);
    }
  });

  test(`package: every npm export is packed and its built module exports exactly the pinned names (${runtime})`, { timeout: 60_000 }, async () => {
    const files = packedFiles();
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, { types: string; default: string } | string> };
    const { "./package.json": manifest, ...code } = pkg.exports;
    assert.equal(manifest, "./package.json");
    assert.deepEqual(Object.keys(code).sort(), Object.keys(PUBLIC_SURFACE).sort());
    // Installed as a user installs it, with the optional peers, so every subpath loads.
    const project = npmProject({ peers: true });
    try {
      // The manifest, as tools resolve it (the exports map hid it before: a review).
      const installed = createRequire(join(project.dir, "index.js"))("serve-hygiene/package.json") as { name: string };
      assert.equal(installed.name, "serve-hygiene");
      for (const [key, entry] of Object.entries(code as Record<string, { types: string; default: string }>)) {
        for (const file of [entry.types, entry.default]) assert.ok(files.includes(file.replace(/^\.\//, "")), `${key}: ${file} is packed`);
        const mod = await import(pathToFileURL(join(project.dir, "node_modules", "serve-hygiene", entry.default)).href);
        assert.deepEqual(exportNames(mod), PUBLIC_SURFACE[key], key);
      }
    } finally {
      project.remove();
    }
  });
});
