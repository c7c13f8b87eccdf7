import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { validateLifecycle } from "../../src/core/lifecycle/lifecycle_config.ts";
import { runtime } from "../support/runtime.ts";

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

describe(`examples: deploy units (${runtime})`, () => {
  test("deploy: the systemd unit stops with SIGTERM and TimeoutStopSec covers drain + flush margin", () => {
    const unit = read("serve-hygiene.service");
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.doesNotMatch(unit, /^KillMode=mixed/m, "no child process is launched");
    assertCovers(number(unit, /^TimeoutStopSec=(\d+)$/m, "TimeoutStopSec") * 1000, unit, "systemd");
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
