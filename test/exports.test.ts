import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { exportNames, PUBLIC_SURFACE } from "./support/surface.ts";

const root = new URL("../", import.meta.url);
const read = (name: string) => JSON.parse(readFileSync(new URL(name, root), "utf8"));

type NpmExport = { types: string; default: string };

describe("export maps", () => {
  const pkg = read("package.json") as { name: string; type: string; exports: Record<string, NpmExport | string>; files: string[] };
  const deno = read("deno.json") as { exports: Record<string, string> };
  /** package.json's code subpaths: all but its manifest's own entry (below). */
  const codeKeys = Object.keys(pkg.exports).filter((k) => k !== "./package.json");

  test("export maps: package.json and deno.json name the same subpaths, the pinned ones", () => {
    assert.deepEqual(codeKeys.sort(), Object.keys(deno.exports).sort());
    assert.deepEqual(Object.keys(deno.exports).sort(), Object.keys(PUBLIC_SURFACE).sort());
  });

  test("export maps: package.json exports itself (tools read serve-hygiene/package.json), nothing else beside the code", () => {
    assert.equal(pkg.exports["./package.json"], "./package.json");
    assert.deepEqual(Object.keys(pkg.exports).length, codeKeys.length + 1);
  });

  test("export maps: each npm entry points at the compiled twin of the Deno source, types first", () => {
    for (const [key, source] of Object.entries(deno.exports)) {
      assert.match(source, /^\.\/src\/.+\.ts$/, key);
      const stem = source.replace(/^\.\/src\//, "./dist/").replace(/\.ts$/, "");
      const entry = pkg.exports[key] as NpmExport;
      assert.deepEqual(Object.keys(entry), ["types", "default"], `${key}: types must come first`);
      assert.equal(entry.types, `${stem}.d.ts`, key);
      assert.equal(entry.default, `${stem}.js`, key);
      assert.ok(existsSync(fileURLToPath(new URL(source, root))), `${source} exists`);
    }
  });

  test("export maps: the package is ESM, named serve-hygiene, and ships dist only", () => {
    assert.equal(pkg.name, "serve-hygiene");
    assert.equal(pkg.type, "module");
    assert.deepEqual(pkg.files, ["dist"]);
  });

  test("export maps: every exported module loads on this runtime", async () => {
    for (const [key, source] of Object.entries(deno.exports)) {
      const mod = await import(new URL(source, root).href);
      assert.ok(Object.keys(mod).length > 0, `${key} exports something`);
    }
  });

  // The API users get: plumbing (the deadline wheel, keyed gates, config resolution, the
  // adapters' serve path and listen functions, the Hono context key) stays importable by
  // path inside the package, never from an export.
  for (const [key, names] of Object.entries(PUBLIC_SURFACE)) {
    test(`export maps: ${key} exports exactly its pinned value names`, async () => {
      const mod = await import(new URL(deno.exports[key]!, root).href);
      assert.deepEqual(exportNames(mod), names);
    });
  }

  test("export maps: no subpath exports a name starting with _ (private by convention)", async () => {
    for (const [key, source] of Object.entries(deno.exports)) {
      const mod = await import(new URL(source, root).href);
      assert.deepEqual(Object.keys(mod).filter((name) => name.startsWith("_")), [], key);
    }
  });
});
