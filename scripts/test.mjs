#!/usr/bin/env node
// The project's one test command. `node scripts/test.mjs [typecheck|node|deno|bun ...]`
// runs the named steps (all of them when none is named): type-check, then the same
// node:test suite on Node, Deno and Bun. It prints one summary line per runtime and a
// closing "N passed, N failed" line, and exits non-zero when any step fails.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = (name) => join(root, "node_modules", ".bin", name);
const STEP_TIMEOUT_MS = 6 * 60_000;

function testFiles(dir = join(root, "test")) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(relative(root, path));
  }
  return out;
}

/** Runs one command, streaming its output; resolves with { code, output }. */
function run(label, cmd, args, env = {}) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(cmd, args, {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const take = (stream, sink) =>
      stream.on("data", (chunk) => {
        output += chunk;
        sink.write(chunk);
      });
    take(child.stdout, process.stdout);
    take(child.stderr, process.stderr);
    // A hung step must not hang CI: end the child we started, by its PID.
    const timer = setTimeout(() => {
      process.stderr.write(`\n${label}: timed out after ${STEP_TIMEOUT_MS / 1000} s, killing pid ${child.pid}\n`);
      child.kill("SIGKILL");
    }, STEP_TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 1 : 0), output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

const num = (output, re) => {
  const all = [...output.matchAll(re)];
  return all.length ? Number(all.at(-1)[1]) : undefined;
};

// Each runner reports in its own words; these read the counts back.
const counters = {
  node: (o) => ({ passed: num(o, /^ℹ pass (\d+)/gm), failed: num(o, /^ℹ fail (\d+)/gm) }),
  deno: (o) => {
    const m = [...o.matchAll(/^(?:ok|FAILED) \| (\d+) passed(?: \((\d+) steps?\))? \| (\d+) failed(?: \((\d+) steps?\))?/gm)].at(-1);
    // Deno reports node:test's describe blocks as tests and their tests as steps; the suite
    // keeps every test inside a describe, so the steps are the count to compare.
    return m ? { passed: Number(m[2] ?? m[1]), failed: Number(m[4] ?? m[3]) } : {};
  },
  bun: (o) => ({ passed: num(o, /^\s*(\d+) pass$/gm), failed: num(o, /^\s*(\d+) fail$/gm) }),
};

const steps = {
  async typecheck() {
    const tsc = await run("tsc", bin("tsc"), ["-p", "tsconfig.json"]);
    // Deno checks what it would serve from JSR; the Bun adapter needs Bun's globals, which
    // tsc (with bun-types) checks instead.
    const deno = await run("deno check", bin("deno"), [
      "check", "--quiet", "src/mod.ts", "src/adapters/deno/mod.ts", "src/adapters/node/mod.ts", "src/hono/mod.ts", "src/prometheus/mod.ts", "src/redis/mod.ts",
    ]);
    const ok = tsc.code === 0 && deno.code === 0;
    return { ok, line: `typecheck: tsc ${tsc.code === 0 ? "ok" : "FAILED"}, deno check ${deno.code === 0 ? "ok" : "FAILED"}` };
  },
  node: () => runtime("node", process.execPath, ["--import", "tsx", "--test", "--test-reporter=spec", ...testFiles()]),
  // Type-checking is the typecheck step's job (tsc sees Bun's types; deno check cannot).
  deno: () => runtime("deno", bin("deno"), ["test", "-A", "--no-check", "--quiet", ...testFiles()]),
  bun: () => runtime("bun", bin("bun"), ["test", ...testFiles().map((f) => `./${f}`)]),
};

let passed = 0;
let failed = 0;

async function runtime(name, cmd, args) {
  const result = await run(name, cmd, args);
  // Some runners colour their output whatever the environment says; read it plain.
  const counts = counters[name](result.output.replace(/\x1b\[[0-9;]*m/g, ""));
  const ok = result.code === 0 && counts.failed === 0 && (counts.passed ?? 0) > 0;
  passed += counts.passed ?? 0;
  failed += counts.failed ?? (ok ? 0 : 1);
  return {
    ok,
    line: `${name}: ${counts.passed ?? "?"} passed, ${counts.failed ?? "?"} failed, exit ${result.code}, ${result.seconds.toFixed(1)} s`,
  };
}

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!(name in steps)) {
    console.error(`unknown step ${JSON.stringify(name)}; steps are ${Object.keys(steps).join(", ")}`);
    process.exit(2);
  }
}
const summary = [];
let ok = true;
for (const name of wanted.length ? wanted : Object.keys(steps)) {
  const result = await steps[name]();
  summary.push(result.line);
  ok &&= result.ok;
}
console.log("\n== summary ==");
for (const line of summary) console.log(line);
console.log(`${passed} passed, ${failed} failed`);
process.exit(ok ? 0 : 1);
