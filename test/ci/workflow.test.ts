import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot, runtime } from "../support/runtime.ts";

// The CI workflow read as text (no YAML parser is installed; the workflow keeps its matrix
// in one-line entries so it reads plainly): which Node versions, which steps, one build.
const read = (path: string) => readFileSync(join(repoRoot, path), "utf8");

interface Entry {
  node: number;
  steps: string;
}

/** The test job's matrix entries (`- { node: N, steps: NAME }`). */
function matrix(workflow: string): Entry[] {
  return [...workflow.matchAll(/^\s*- \{ node: (\d+), steps: ([a-z ]+) \}\s*$/gm)].map((m) => ({ node: Number(m[1]), steps: m[2]!.trim() }));
}

/** What `scripts/test.mjs` can run (its `steps` object's keys). */
function testSteps(): string[] {
  const script = read("scripts/test.mjs");
  const body = /const steps = \{([\s\S]*?)\n\};/.exec(script);
  assert.ok(body, "scripts/test.mjs defines its steps");
  return [...body[1]!.matchAll(/^ {2}(?:async )?([a-z]+)(?:\(|:)/gm)].map((m) => m[1]!);
}

describe(`ci: the workflow (${runtime})`, () => {
  const workflow = read(".github/workflows/ci.yml");

  test(`ci: the Node runner runs on Node 20, 22 and 24 (${runtime})`, () => {
    const versions = matrix(workflow).filter((e) => e.steps.split(" ").includes("node")).map((e) => e.node);
    assert.deepEqual(versions.sort(), [20, 22, 24]);
  });

  test(`ci: every step of npm test runs somewhere, typecheck (with deno publish --dry-run) and the deno and bun runners included (${runtime})`, () => {
    const ran = new Set(matrix(workflow).flatMap((e) => e.steps.split(" ")));
    assert.deepEqual([...ran].sort(), testSteps().sort());
    assert.match(workflow, /^\s*- run: node scripts\/test\.mjs \$\{\{ matrix\.steps \}\}$/m);
    assert.match(read("scripts/test.mjs"), /\["publish", "--dry-run"/, "the typecheck step runs deno publish --dry-run");
  });

  test(`ci: the package is built once and the test jobs use that tarball (the consumer smoke test included) (${runtime})`, () => {
    const commands = workflow.split("\n").filter((line) => /^\s*- run: /.test(line)).join("\n");
    const builds = commands.match(/npm (?:run build|pack)|scripts\/build\.mjs/g) ?? [];
    assert.deepEqual(builds, ["npm pack"], "one build: npm pack (its prepack builds dist/)");
    assert.match(read("package.json"), /"prepack": "npm run build"/);
    assert.match(workflow, /^ {4}needs: package$/m);
    assert.match(workflow, /actions\/upload-artifact@v\d[\s\S]*actions\/download-artifact@v\d/);
    assert.match(workflow, /SERVE_HYGIENE_TARBALL=/);
    assert.match(read("test/support/consumer.ts"), /process\.env\.SERVE_HYGIENE_TARBALL/, "the smoke test takes the shared tarball");
  });

  test(`ci: every job installs with npm ci from the lockfile (${runtime})`, () => {
    const jobs = workflow.slice(workflow.search(/^jobs:$/m)).split(/^ {2}(?=[a-z]+:$)/m).slice(1);
    assert.ok(jobs.length >= 2);
    for (const job of jobs) assert.match(job, /- run: npm ci$/m, job.split("\n")[0]);
  });

  test(`ci: .ci/run installs with npm ci, then runs npm test (${runtime})`, () => {
    const run = read(".ci/run");
    const ci = run.search(/^npm ci\b/m);
    const test = run.search(/^npm test$/m);
    assert.ok(ci >= 0 && test > ci, run);
  });
});
