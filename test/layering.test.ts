import { describe, test } from "node:test";
import assert from "node:assert/strict";
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
});
