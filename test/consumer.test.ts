import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  jsrProject,
  npmProject,
  npmSubpaths,
  onPortZero,
  readmeServer,
  runCommand,
  runToEnd,
  type Scratch,
  startServer,
} from "./support/consumer.ts";
import { repoRoot, runtime } from "./support/runtime.ts";

// The package as a user gets it: the packed tarball installed into a fresh project (no
// network: what it needs is linked from node_modules), each runtime's runner trying its own
// runtime. A user's project goes from install to a running guarded server with only the
// README's first screen (its Install section), answering one real request on port 0 and
// draining on SIGTERM. Subpaths come from package.json/deno.json, so a new one is covered.

/** Imports every subpath; prints what loaded, what failed (and why), and whether globals moved. */
const importAll = (specifiers: string[]) => `
const before = [globalThis.Request, globalThis.Response];
const result = {};
for (const specifier of ${JSON.stringify(specifiers)}) {
  try {
    result[specifier] = { names: Object.keys(await import(specifier)).length };
  } catch (error) {
    result[specifier] = { error: String(error?.message ?? error).split("\\n")[0] };
  }
}
const globalsKept = globalThis.Request === before[0] && globalThis.Response === before[1];
console.log(JSON.stringify({ result, globalsKept }));
`;

type Imported = { result: Record<string, { names?: number; error?: string }>; globalsKept: boolean };

async function importEvery(project: Scratch, specifiers: string[], name = runtime): Promise<Imported> {
  project.write("import_all.mjs", importAll(specifiers));
  const run = await runToEnd(project.dir, runCommand(name, "import_all.mjs"));
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split("\n").at(-1)!) as Imported;
}

/** Runs the README's server for this runtime in the project, sends it one request, stops it with SIGTERM. */
async function serveOnce(project: Scratch, code: string, file: string, denoFlags?: string[]) {
  project.write(file, onPortZero(code));
  const server = startServer(project.dir, runCommand(runtime, file, denoFlags));
  try {
    const url = await server.url;
    const res = await fetch(url.replace("localhost", "127.0.0.1"));
    assert.equal(res.status, 200);
    assert.ok((await res.text()).length > 0);
  } finally {
    const code = await server.stop();
    assert.equal(code, 0, `the server drained and exited cleanly on SIGTERM\n${server.output().stderr}`);
  }
  return server.output();
}

const serverFile = runtime === "node" ? "server.mjs" : "server.ts";

describe(`consumer: the packed package in a fresh project (${runtime})`, () => {
  const projects: Scratch[] = [];
  after(() => projects.forEach((p) => p.remove()));

  test(`consumer: a plain install loads the core and every adapter; a subpath whose optional peer is missing fails naming it; importing changes no global (${runtime})`, { timeout: 90_000 }, async () => {
    const project = npmProject({ peers: false });
    projects.push(project);
    const { result, globalsKept } = await importEvery(project, npmSubpaths());
    for (const specifier of ["serve-hygiene", "serve-hygiene/node", "serve-hygiene/bun", "serve-hygiene/deno"]) {
      assert.ok((result[specifier]?.names ?? 0) > 0, `${specifier}: ${result[specifier]?.error}`);
    }
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { peerDependencies: Record<string, string> };
    for (const [specifier, got] of Object.entries(result)) {
      if (got.error === undefined) continue;
      const missing = Object.keys(pkg.peerDependencies).filter((peer) => !project.installed.includes(peer) && got.error!.includes(`'${peer}'`));
      assert.equal(missing.length, 1, `${specifier} failed without naming a missing optional peer: ${got.error}`);
    }
    assert.ok(globalsKept, "sideEffects: false — importing a subpath replaces no global");
  });

  test(`consumer: with its peers installed every subpath loads, and the README's ${runtime} server answers one request on port 0 and drains on SIGTERM (${runtime})`, { timeout: 90_000 }, async () => {
    const project = npmProject({ peers: true });
    projects.push(project);
    const { result } = await importEvery(project, npmSubpaths());
    for (const [specifier, got] of Object.entries(result)) assert.ok((got.names ?? 0) > 0, `${specifier}: ${got.error}`);
    // Deno's snippet names the JSR package; from npm the same module is serve-hygiene/deno.
    const code = readmeServer(runtime).replace(/"@serve-hygiene\/serve-hygiene\//g, '"serve-hygiene/');
    const { stderr } = await serveOnce(project, code, serverFile, runtime === "deno" ? readmeDenoFlags() : undefined);
    assert.doesNotMatch(stderr, /no-legacy-abort/, "the project sets what the README asks for: no warning");
  });

  test(`consumer: tsc type-checks a consumer of every subpath under NodeNext and bundler resolution (${runtime})`, { skip: runtime !== "node" && "tsc's verdict does not depend on the runner: checked once, under node", timeout: 90_000 }, async () => {
    const project = npmProject({ peers: true, types: ["@types/node"] });
    projects.push(project);
    const uses = npmSubpaths().map((s, i) => `import * as m${i} from "${s}";`).join("\n");
    project.write("consumer.ts", `${uses}\n${onPortZero(readmeServer("node"))}\nvoid [${npmSubpaths().map((_, i) => `m${i}`).join(", ")}];\n`);
    for (const [module, resolution] of [["NodeNext", "NodeNext"], ["ESNext", "Bundler"]] as const) {
      project.write("tsconfig.json", JSON.stringify({
        compilerOptions: { target: "ES2022", module, moduleResolution: resolution, strict: true, noEmit: true, types: ["node"], skipLibCheck: false },
        files: ["consumer.ts"],
      }));
      const tsc = await runToEnd(project.dir, [join(repoRoot, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"]], 60_000);
      assert.equal(tsc.code, 0, `${resolution}: ${tsc.stdout}${tsc.stderr}`);
    }
  });
});

describe(`consumer: the sources as JSR serves them, under Deno (${runtime})`, { skip: runtime !== "deno" && "JSR is Deno's registry" }, () => {
  test(`consumer: through an import map of the JSR names, every subpath loads, deno check passes and the README's Deno server answers one request (${runtime})`, { timeout: 90_000 }, async () => {
    const project = jsrProject();
    try {
      const specifiers = npmSubpaths().map((s) => s.replace(/^serve-hygiene/, project.name));
      const { result } = await importEvery(project, specifiers);
      for (const [specifier, got] of Object.entries(result)) assert.ok((got.names ?? 0) > 0, `${specifier}: ${got.error}`);
      project.write("check.ts", `${specifiers.map((s, i) => `import * as m${i} from "${s}";`).join("\n")}\nvoid [${specifiers.map((_, i) => `m${i}`).join(", ")}];\n`);
      project.write("server.ts", onPortZero(readmeServer("deno")));
      const check = await runToEnd(project.dir, [join(repoRoot, "node_modules", ".bin", "deno"), ["check", "--quiet", "check.ts", "server.ts"]], 60_000);
      assert.equal(check.code, 0, check.stderr);
      await serveOnce(project, readmeServer("deno"), "server.ts", readmeDenoFlags());
    } finally {
      project.remove();
    }
  });
});

/** The permissions the README's Deno command line grants (`deno run --allow-net server.ts`). */
function readmeDenoFlags(): string[] {
  const m = /deno run ((?:--[a-z-]+(?:=\S+)? )*)server\.ts/.exec(readmeServer("deno"));
  return m ? m[1]!.trim().split(/\s+/).filter(Boolean) : ["-A"];
}
