import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { repoRoot, runtime } from "./support/runtime.ts";

// Every JSDoc @example in src/ is real code: extract it, point its package imports at the
// sources, make console.assert throw, and run it on the runtime the suite runs under. An
// example imports what it shows from the package ("serve-hygiene", "serve-hygiene/hono", …),
// so it fails once that is no longer exported; an example of an internal module imports it
// by its relative path ("./deadline_wheel.ts").

const SUBPATHS: Record<string, string> = {
  "serve-hygiene": "src/mod.ts",
  "serve-hygiene/node": "src/adapters/node/mod.ts",
  "serve-hygiene/deno": "src/adapters/deno/mod.ts",
  "serve-hygiene/bun": "src/adapters/bun/mod.ts",
  "serve-hygiene/hono": "src/hono/mod.ts",
  "serve-hygiene/prometheus": "src/prometheus/mod.ts",
  "serve-hygiene/redis": "src/redis/mod.ts",
};

interface Example {
  file: string;
  line: number;
  code: string;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? [path] : [];
  });
}

function examples(): Example[] {
  const found: Example[] = [];
  for (const path of sources(join(repoRoot, "src"))) {
    const lines = readFileSync(path, "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (!/^\s*\*\s*@example/.test(lines[i]!)) continue;
      const start = lines.findIndex((l, j) => j > i && /^\s*\*\s*```ts/.test(l));
      const end = lines.findIndex((l, j) => j > start && /^\s*\*\s*```\s*$/.test(l));
      if (start < 0 || end < 0) continue;
      const code = lines.slice(start + 1, end).map((l) => l.replace(/^\s*\* ?/, "")).join("\n");
      found.push({ file: relative(repoRoot, path), line: i + 1, code });
    }
  }
  return found;
}

// An example for an adapter runs on that adapter's runtime only.
const adapterOf = (code: string) => /from "serve-hygiene\/(node|deno|bun)"/.exec(code)?.[1];

describe(`doc examples (${runtime})`, () => {
  const all = examples();
  // Inside the repo (bare imports resolve from its node_modules), outside node_modules (Deno
  // strips types only outside it); git-ignored.
  const dir = join(repoRoot, ".doc-examples", runtime);

  test("doc examples: there are examples to run, one or more per public module", () => {
    assert.ok(all.length >= 40, `found ${all.length}`);
  });

  for (const [n, example] of all.entries()) {
    const only = adapterOf(example.code);
    const skip = only !== undefined && only !== runtime;
    test(`doc example: ${example.file}:${example.line}${skip ? ` (skipped on ${runtime}: an example of the ${only} adapter)` : ""}`, { skip }, async () => {
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `example_${n}.mts`); // .mts: ESM whatever the folder says
      const code = example.code
        .replace(/from "(serve-hygiene(?:\/[a-z]+)?)"/g, (_m, spec: string) => {
          assert.ok(SUBPATHS[spec], `unknown import ${spec}`);
          return `from ${JSON.stringify(pathToFileURL(join(repoRoot, SUBPATHS[spec]!)).href)}`;
        })
        // An internal module (not exported by the package) shows itself by its own path.
        .replace(/from "(\.{1,2}\/[^"]+\.ts)"/g, (_m, spec: string) =>
          `from ${JSON.stringify(pathToFileURL(join(repoRoot, dirname(example.file), spec)).href)}`
        );
      const prelude =
        "const console = { ...globalThis.console, log() {}, assert(ok: unknown, ...m: unknown[]) { if (!ok) throw new Error('console.assert failed ' + m.join(' ')); } };\n";
      writeFileSync(path, `${prelude}${code}\nexport {};\n`);
      try {
        await import(pathToFileURL(path).href);
      } finally {
        rmSync(path, { force: true });
      }
    });
  }
});
