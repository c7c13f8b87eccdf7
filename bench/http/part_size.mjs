// Part 5: size. The core (the root export, src/mod.ts) bundled by esbuild, minified, then
// gzipped (level 9); the adapters and the Hono entry beside it (their peers and node:*
// left external); and the runtime dependency count from package.json.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { root } from "./_lib.mjs";
import { fmt, table } from "./_report.mjs";

const ENTRIES = [
  ["serve-hygiene (the core)", "src/mod.ts"],
  ["serve-hygiene/node", "src/adapters/node/mod.ts"],
  ["serve-hygiene/deno", "src/adapters/deno/mod.ts"],
  ["serve-hygiene/bun", "src/adapters/bun/mod.ts"],
  ["serve-hygiene/hono", "src/hono/mod.ts"],
  ["serve-hygiene/prometheus", "src/prometheus/mod.ts"],
];

export async function size() {
  const esbuildVersion = JSON.parse(readFileSync(join(root, "node_modules", "esbuild", "package.json"), "utf8")).version;
  const rows = [];
  for (const [name, entry] of [...ENTRIES, ["createGuard alone (tree-shaken)", "-"]]) {
    const out = await build({
      ...(entry === "-" ? { stdin: { contents: 'export { createGuard } from "./src/mod.ts";', resolveDir: root, loader: "ts" } } : { entryPoints: [join(root, entry)] }),
      bundle: true,
      minify: true,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      write: false,
      external: ["node:*", "hono", "hono/*", "prom-client"],
      logLevel: "silent",
    });
    const code = out.outputFiles[0].contents;
    rows.push({ name, entry, min: code.length, gz: gzipSync(code, { level: 9 }).length });
  }
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const deps = Object.keys(pkg.dependencies ?? {});
  const peers = Object.keys(pkg.peerDependencies ?? {});
  const core = rows[0];
  const md = [
    `# Part 5 — size`,
    "",
    `esbuild ${esbuildVersion}: \`bundle, minify, format esm, platform neutral, target es2022\`, node:* and the optional peers (hono, prom-client) external; gzip level 9. Each row is its entry bundled alone, so the adapter rows include the core.`,
    "",
    table(["entry", "file", "minified bytes", "min + gzip bytes", "min + gzip KB"], rows.map((r) => [r.name, r.entry === "-" ? "`export { createGuard }`" : `\`${r.entry}\``, fmt.int(r.min), fmt.int(r.gz), (r.gz / 1024).toFixed(1)])),
    "",
    `Core target ≤ 10 KB min + gzip: ${(core.gz / 1024).toFixed(1)} KB — ${core.gz <= 10 * 1024 ? "met" : "**missed**"}.`,
    "",
    `Runtime dependencies (package.json \`dependencies\`): ${deps.length}${deps.length ? ` (${deps.join(", ")})` : ""} — target 0 ${deps.length === 0 ? "met" : "**missed**"}. Optional peer dependencies: ${peers.join(", ")} (the core never imports them).`,
    "",
  ];
  const summary = rows.map((r) => `${r.name}: ${fmt.int(r.min)} B min, ${fmt.int(r.gz)} B min+gz`).join("\n") + `\nruntime dependencies: ${deps.length}`;
  return { files: { "size.md": md.join("\n"), "size.json": JSON.stringify({ esbuild: esbuildVersion, rows, dependencies: deps, peerDependencies: peers }, null, 1) }, summary };
}
