import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { importCycles, importGraph, relativeImports, tsFiles } from "./support/imports.ts";

const src = fileURLToPath(new URL("../src", import.meta.url));
const core = join(src, "core");

describe("layering", () => {
  test("layering: the rules read import and export specifiers and find a two-module cycle", () => {
    const source = 'import type { A } from "./a.ts";\nimport {\n  b,\n} from "../b.ts";\nexport * from "./c.ts";\nconst x = "./not.ts";\nconst m = await import("../d.ts");\nimport "./e.ts";\n';
    assert.deepEqual(relativeImports(source), ["./a.ts", "../b.ts", "./c.ts", "../d.ts", "./e.ts"]);
    const graph = new Map([["/r/a.ts", ["/r/b.ts"]], ["/r/b.ts", ["/r/a.ts"]], ["/r/c.ts", ["/r/a.ts"]]]);
    assert.deepEqual(importCycles(graph, "/r"), ["a.ts -> b.ts -> a.ts"]);
  });

  test("layering: no module under src imports itself through a cycle (types included)", () => {
    assert.deepEqual(importCycles(importGraph(tsFiles(src)), src), []);
  });

  test("layering: the subpath modules (adapters, hono, prometheus) reach the core only through core/mod.ts", () => {
    const deep = tsFiles(src)
      .filter((file) => !file.startsWith(core))
      .flatMap((file) =>
        [...importGraph([file]).get(file)!]
          .filter((dep) => dep.startsWith(core + "/") && dep !== join(core, "mod.ts"))
          .map((dep) => `${relative(src, file)} imports ${relative(dirname(file), dep)}`)
      );
    assert.deepEqual(deep, []);
  });

  // Adapters only inject: each imports the core and its own folder, never another adapter's
  // files (the Bun adapter once took its Host from the Node adapter's folder).
  test("layering: no adapter imports another adapter's files (Bun nothing from Node)", () => {
    const adapters = join(src, "adapters");
    const crossing = tsFiles(adapters).flatMap((file) => {
      const own = relative(adapters, file).split(sep)[0]!;
      return importGraph([file]).get(file)!
        .map((dep) => relative(adapters, dep))
        .filter((dep) => !dep.startsWith("..") && dep.split(sep)[0] !== own)
        .map((dep) => `${relative(adapters, file)} imports ${dep}`);
    });
    assert.deepEqual(crossing, []);
  });

  // The layout shows the architecture (DESIGN.md's picture): the core is grouped by concern,
  // each folder with its own mod.ts, and core/mod.ts gathers the folders; test tools (the
  // manual clock) sit apart in src/testing, and runtime code never imports them.
  test("layering: src/core is grouped into folders, each with a mod.ts that core/mod.ts gathers", () => {
    const folders = readdirSync(core).filter((name) => statSync(join(core, name)).isDirectory()).sort();
    assert.deepEqual(folders, ["gates", "host", "lifecycle", "limits", "overload", "request"]);
    for (const folder of folders) assert.ok(statSync(join(core, folder, "mod.ts")).isFile(), `${folder}/mod.ts`);
    const gathered = relativeImports(readFileSync(join(core, "mod.ts"), "utf8"));
    const intoFolders = gathered.filter((spec) => spec.split("/").length > 2);
    // Every public folder is gathered through its mod.ts, never file by file; gates/ is the
    // guard's own (internal) list and stays out of the public surface.
    assert.deepEqual(intoFolders.sort(), folders.filter((f) => f !== "gates").map((f) => `./${f}/mod.ts`));
    assert.ok(!readdirSync(core).includes("manual_clock.ts"), "the manual clock is a test tool, not core runtime code");
  });

  test("layering: no runtime module (core, adapters, hono, prometheus) imports src/testing", () => {
    const testing = join(src, "testing");
    const offenders = tsFiles(src)
      .filter((file) => !file.startsWith(testing + sep) && file !== join(src, "mod.ts"))
      .flatMap((file) =>
        importGraph([file]).get(file)!.filter((dep) => dep.startsWith(testing + sep)).map((dep) => `${relative(src, file)} imports ${relative(src, dep)}`)
      );
    assert.deepEqual(offenders, []);
  });
});
