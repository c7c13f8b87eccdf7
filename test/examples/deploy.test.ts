import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { validateLifecycle } from "../../src/core/lifecycle/lifecycle_config.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { runtime, startChild } from "../support/runtime.ts";

const read = (name: string) => readFileSync(new URL(`../../examples/deploy/${name}`, import.meta.url), "utf8");
const FLUSH_MARGIN_MS = 2_000;

/** The one number a regex finds, or a failed assertion naming what was missing. */
function number(text: string, re: RegExp, what: string): number {
  const m = text.match(re);
  assert.ok(m, `${what} not found`);
  return Number(m[1]);
}

/** A variable's value as a unit sets it: `NAME=1`, `NAME: "1"`, or `- name: NAME` / `value: "1"`. */
function envValue(text: string, name: string): number | undefined {
  const m = text.match(new RegExp(`${name}(?:\\s*[=:]\\s*|\\s*\\n\\s*value:\\s*)"?(\\d+)`));
  return m ? Number(m[1]) : undefined;
}

/** A platform grace (ms) must hold the drain window plus the flush margin (and the request timeout below the drain). */
function assertCovers(graceMs: number, env: string, where: string) {
  const drain = envValue(env, "HYGIENE_DRAIN_TIMEOUT_MS");
  const request = envValue(env, "HYGIENE_REQUEST_TIMEOUT_MS");
  assert.ok(drain !== undefined && request !== undefined, `${where}: the drain window and request timeout must be set explicitly`);
  const preStop = envValue(env, "HYGIENE_PRESTOP_DELAY_MS");
  // Throws (naming the numbers) when the grace does not cover drain + flush margin.
  validateLifecycle({ requestTimeoutMs: request, drainTimeoutMs: drain, preStopDelayMs: Number(preStop ?? 0), platformGraceMs: graceMs, flushMarginMs: FLUSH_MARGIN_MS });
}

/** Whether Docker's ignore lines leave `path` out of the build context: the last line that matches
 * the path or a folder above it wins ("*" is one name), "!" keeps. */
function ignored(lines: readonly string[], path: string): boolean {
  const parts = path.split("/");
  let out = false;
  for (const line of lines) {
    const keep = line.startsWith("!");
    const segments = (keep ? line.slice(1) : line).split("/");
    if (segments.length <= parts.length && segments.every((s, i) => s === "*" || s === parts[i])) out = !keep;
  }
  return out;
}

/** The packages a package loads, by package-lock.json's tree (its dependencies, theirs, …). */
function closure(lock: { packages: Record<string, { dependencies?: Record<string, string> }> }, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const todo = [...roots];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (seen.has(name)) continue;
    const entry = lock.packages[`node_modules/${name}`];
    assert.ok(entry, `${name} is not in package-lock.json`);
    seen.add(name);
    todo.push(...Object.keys(entry.dependencies ?? {}));
  }
  return seen;
}

describe(`examples: deploy units (${runtime})`, () => {
  test("deploy: the image's ignore file keeps what the Dockerfile copies and the server loads, not the bun and deno binaries", () => {
    const lines = read("Dockerfile.dockerignore").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
    const copied = [...read("Dockerfile").matchAll(/^COPY (.+) \S+$/gm)].flatMap((m) => m[1]!.split(" "));
    assert.deepEqual(copied.filter((c) => c.startsWith("-")), [], "a COPY flag the check does not read");
    assert.ok(copied.includes("node_modules") && copied.includes("src") && copied.includes("examples"), copied.join(" "));
    for (const c of copied) assert.equal(ignored(lines, c), false, `the Dockerfile copies ${c}, the ignore file leaves it out`);
    for (const file of ["src/adapters/bun/mod.ts", "examples/edge-server.ts", "examples/edge/app.ts"]) assert.equal(ignored(lines, file), false, file);
    // The server's imports (hono; redis once REDIS_URL is set) and all they load.
    const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8"));
    const loaded = closure(lock, ["hono", "redis"]);
    assert.ok(loaded.has("@redis/client"), [...loaded].join(" "));
    for (const name of loaded) assert.equal(ignored(lines, `node_modules/${name}/package.json`), false, `the server loads ${name}`);
    for (const binary of ["node_modules/bun/package.json", "node_modules/@oven/bun-linux-x64/bin/bun", "node_modules/deno/package.json", "node_modules/@deno/linux-x64-glibc/deno", "test/core/guard.test.ts", ".git/HEAD", "bench/http/run.mjs"]) {
      assert.equal(ignored(lines, binary), true, `${binary} goes into the image`);
    }
  });

  test("deploy: the ignore-file check reads the last matching line, folders and '*'", () => {
    assert.equal(ignored(["*", "!node_modules", "node_modules/bun"], "node_modules/bun/bin/bun"), true);
    assert.equal(ignored(["*", "!node_modules", "node_modules/bun"], "node_modules/bun-types/index.d.ts"), false);
    assert.equal(ignored(["*", "!src"], "README.md"), true);
    assert.equal(ignored(["*", "!src", "src"], "src/mod.ts"), true);
  });

  test("deploy: the Kubernetes manifest runs a locally built image without pulling it", () => {
    const manifest = read("kubernetes.yaml");
    const image = manifest.match(/^\s*image: (\S+)$/m)?.[1];
    assert.ok(image !== undefined && !image.endsWith(":latest") && image.includes(":"), `image ${image}`);
    assert.match(manifest, /^\s*imagePullPolicy: IfNotPresent$/m);
    assert.match(read("Dockerfile"), new RegExp(`docker build -f examples/deploy/Dockerfile -t ${image!.replace(/[.:]/g, "\\$&")} \\.`));
  });

  test("deploy: the systemd unit stops with SIGTERM and TimeoutStopSec covers drain + flush margin", () => {
    const unit = read("serve-hygiene.service");
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.doesNotMatch(unit, /^KillMode=mixed/m, "no child process is launched");
    assertCovers(number(unit, /^TimeoutStopSec=(\d+)$/m, "TimeoutStopSec") * 1000, unit, "systemd");
  });

  // A review: tsx writes a compile cache under the temporary directory as it starts, and where
  // nothing is writable (a read-only root, no /tmp) the server died before listening.
  test("deploy: the systemd unit's command starts where the temporary directory cannot be written, with the unit's environment (node)", { timeout: 60_000 }, async () => {
    const unit = read("serve-hygiene.service");
    const env = Object.fromEntries([...unit.matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
    assert.equal(env.TSX_DISABLE_CACHE, "1");
    // A file where the temporary directory should be: nothing can be made under it.
    const blocked = join(tmpdir(), `not-a-dir-${process.pid}-${Date.now()}`);
    writeFileSync(blocked, "");
    const child = startChild("examples/edge-server.ts", { ...env, PORT: "0", HOST: "127.0.0.1", TMPDIR: blocked }, "node");
    try {
      const listening = JSON.parse(await child.waitForLine(/"listening"/));
      assert.equal((await fetch(`http://127.0.0.1:${listening.port}/healthz`)).status, 200);
      child.kill("SIGTERM");
      assert.equal(await child.exited, 0);
    } finally {
      child.kill();
      rmSync(blocked, { force: true });
    }
  });

  test("deploy: the Kubernetes grace period covers drain + flush margin, readiness probes /readyz", () => {
    const manifest = read("kubernetes.yaml");
    assert.match(manifest, /readinessProbe:\s*\n\s*httpGet:\s*\n\s*path: \/readyz/);
    assert.match(manifest, /livenessProbe:\s*\n\s*httpGet:\s*\n\s*path: \/healthz/);
    assertCovers(number(manifest, /terminationGracePeriodSeconds: (\d+)/, "terminationGracePeriodSeconds") * 1000, manifest, "kubernetes");
  });

  test("deploy: the Dockerfile stops with SIGTERM, runs bun or deno in exec form; compose's grace covers the drain", () => {
    const dockerfile = read("Dockerfile");
    assert.match(dockerfile, /^STOPSIGNAL SIGTERM$/m);
    assert.match(dockerfile, /^CMD \["(bun", "run|deno", "run", "-A)", "examples\/edge-server\.ts"\]$/m);
    const compose = read("compose.yaml");
    assert.match(compose, /stop_signal: SIGTERM/);
    const grace = number(compose, /stop_grace_period: (\d+)s/, "stop_grace_period") * 1000;
    assertCovers(grace, dockerfile + compose, "docker");
  });

  test("deploy: the check itself fails when a grace no longer covers the drain", () => {
    assert.throws(() => assertCovers(10_000, "HYGIENE_DRAIN_TIMEOUT_MS=25000\nHYGIENE_REQUEST_TIMEOUT_MS=20000", "t"), /current values are 25000 \+ 2000 = 27000 and 10000/);
  });
});
