// Adapters only inject: each one imports the core and its own folder, never another
// adapter's files (the Bun adapter once took its Host from the Node adapter's folder).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const adapters = fileURLToPath(new URL("../../src/adapters", import.meta.url));

/** Every relative module specifier of `source`: static and type imports, re-exports, dynamic imports. */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)) found.push(m[1]!);
  return found;
}

/** The adapter folders that `file` (under src/adapters/<name>/) imports from, other than its own. */
function foreignAdapters(name: string): string[] {
  const dir = join(adapters, name);
  return readdirSync(dir).filter((f) => f.endsWith(".ts")).flatMap((file) =>
    relativeImports(readFileSync(join(dir, file), "utf8")).flatMap((spec) => {
      const target = relative(adapters, resolve(dirname(join(dir, file)), spec));
      const folder = target.split(sep)[0]!;
      return !target.startsWith("..") && folder !== name ? [`${name}/${file} imports ${spec}`] : [];
    })
  );
}

describe("adapter imports", () => {
  test("adapter imports: the rule sees static, type, re-export and dynamic imports", () => {
    const source = [
      'import { a } from "../node/x.ts";',
      'import type { B } from "../../core/mod.ts";',
      'export * from "./host.ts";',
      'const m = await import("../deno/y.ts");',
    ].join("\n");
    assert.deepEqual(relativeImports(source), ["../node/x.ts", "../../core/mod.ts", "./host.ts", "../deno/y.ts"]);
  });

  test("adapter imports: src/adapters/bun imports nothing from src/adapters/node", () => {
    assert.deepEqual(foreignAdapters("bun"), []);
  });

  test("adapter imports: no adapter imports another adapter's files", () => {
    const names = readdirSync(adapters, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);
    assert.deepEqual(names.sort(), ["bun", "deno", "node"]);
    assert.deepEqual(names.flatMap(foreignAdapters), []);
  });
});
