import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { tsFiles } from "./support/imports.ts";
import { repoRoot, runtime } from "./support/runtime.ts";

// What a plain `npm install serve-hygiene` (or `deno add jsr:…`) brings, read from the
// manifests: the consumer smoke test (test/consumer.test.ts) proves it by installing.
interface Manifest {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  repository?: { type: string; url: string };
  homepage?: string;
  bugs?: { url: string };
  sideEffects?: boolean;
}
const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as Manifest;
const deno = JSON.parse(readFileSync(join(repoRoot, "deno.json"), "utf8")) as { name: string; exports: Record<string, string>; imports?: Record<string, string> };

/** The package names a source imports at run time (type-only imports are erased). */
function runtimePackages(source: string): string[] {
  const names = [...source.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s*["']([^."'][^"']*)["']|\bimport\s*\(\s*["']([^."'][^"']*)["']/gm)]
    .map((m) => (m[1] ?? m[2])!)
    .filter((s) => !s.startsWith("node:"));
  return names.map((s) => s.split("/").slice(0, s.startsWith("@") ? 2 : 1).join("/"));
}

/** The folder of src/ a file belongs to: core, adapters/<name>, or the subpath's own folder. */
const area = (file: string) => {
  const parts = relative(join(repoRoot, "src"), file).split(/[\\/]/);
  return parts[0] === "adapters" ? `adapters/${parts[1]}` : parts.length > 1 ? parts[0]! : "root";
};

describe(`package manifest (${runtime})`, () => {
  test(`package manifest: the core needs no package; the Node adapter's one is a dependency; every other import is an optional peer (${runtime})`, () => {
    const needs = new Map<string, Set<string>>();
    for (const file of tsFiles(join(repoRoot, "src"))) {
      for (const name of runtimePackages(readFileSync(file, "utf8"))) {
        const at = needs.get(area(file)) ?? new Set();
        needs.set(area(file), at.add(name));
      }
    }
    for (const core of ["root", "core", "testing", "adapters/bun", "adapters/deno", "hono"]) {
      assert.deepEqual([...(needs.get(core) ?? [])], [], `${core} imports no package at run time`);
    }
    assert.deepEqual([...(needs.get("adapters/node") ?? [])], ["@hono/node-server"]);
    assert.deepEqual(Object.keys(pkg.dependencies ?? {}), ["@hono/node-server"], "installed with the package: what serve-hygiene/node imports");
    for (const [at, names] of needs) {
      if (at === "adapters/node") continue;
      for (const name of names) {
        assert.ok(pkg.peerDependencies?.[name], `${at} imports ${name}: a peer dependency`);
        assert.equal(pkg.peerDependenciesMeta?.[name]?.optional, true, `${name} is an optional peer`);
      }
    }
  });

  test(`package manifest: repository, homepage and bugs name the repository, so the README's images resolve on the registry page (${runtime})`, () => {
    const repo = "https://github.com/serve-hygiene/serve-hygiene";
    assert.deepEqual(pkg.repository, { type: "git", url: `git+${repo}.git` });
    assert.equal(pkg.homepage, `${repo}#readme`);
    assert.deepEqual(pkg.bugs, { url: `${repo}/issues` });
    assert.equal(pkg.sideEffects, false);
  });

  test(`package manifest: the README's images are absolute URLs of files in this repository (${runtime})`, () => {
    const raw = "https://raw.githubusercontent.com/serve-hygiene/serve-hygiene/main/";
    const images = [...readFileSync(join(repoRoot, "README.md"), "utf8").matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    assert.ok(images.length > 0);
    for (const url of images) {
      assert.ok(url.startsWith(raw), `${url} is under ${raw}`);
      assert.ok(existsSync(join(repoRoot, url.slice(raw.length))), `${url} names a file of the repository`);
    }
  });

  test(`package manifest: deno.json maps every npm name of the package to its source and every package the sources import to npm: (${runtime})`, () => {
    const imports = deno.imports ?? {};
    for (const [key, source] of Object.entries(deno.exports)) {
      assert.equal(imports[`serve-hygiene${key.slice(1)}`], source, `serve-hygiene${key.slice(1)} (doc examples import it so)`);
    }
    const packages = { ...pkg.dependencies, ...pkg.peerDependencies };
    for (const [name, range] of Object.entries(packages)) {
      // A Deno specifier takes one range: the newest alternative of an npm `a || b`.
      const last = range.split("||").at(-1)!.trim();
      assert.equal(imports[name], `npm:${name}@${last}`, name);
    }
  });
});
