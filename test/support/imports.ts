// Static import graph of the sources, as functions so the rules themselves are tested.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** Relative specifiers a module imports or re-exports (`import type`, bare `import "./x"` and dynamic `import()` too), in order. */
export function relativeImports(source: string): string[] {
  return [...source.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.[^"']+)["']|\bimport\s*\(?\s*["'](\.[^"']+)["']/gm)]
    .map((m) => (m[1] ?? m[2])!);
}

/** Every `.ts` file under `dir`, absolute. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : name.endsWith(".ts") ? [path] : [];
  });
}

/** The module graph of `files`: each file to the files it imports (resolved, absolute). */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  return new Map(files.map((f) => [f, relativeImports(readFileSync(f, "utf8")).map((s) => resolve(dirname(f), s))]));
}

/** Each import cycle once, as `a -> b -> a` with paths relative to `root`. */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>, root: string): string[] {
  const cycles: string[] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const dep of graph.get(file) ?? []) {
      if (state.get(dep) === "open") {
        cycles.push([...stack.slice(stack.indexOf(dep)), dep].map((p) => relative(root, p)).join(" -> "));
      } else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
}
