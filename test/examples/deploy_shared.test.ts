// examples/deploy/compose.redis.yaml: two instances of the edge server sharing one per-IP
// budget through Valkey. Parsed and checked against what exists: the Dockerfile it builds,
// the variables the example reads, the store service it names, the drain it must cover.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { validateLifecycle } from "../../src/core/lifecycle/lifecycle_config.ts";
import { readEdgeConfig } from "../../examples/edge/config.ts";
import { runtime } from "../support/runtime.ts";
import { parseYamlLite, type YamlValue } from "../support/yaml_lite.ts";

const deployDir = fileURLToPath(new URL("../../examples/deploy/", import.meta.url));
const configSource = readFileSync(new URL("../../examples/edge/config.ts", import.meta.url), "utf8");
type Map = { [key: string]: YamlValue };
const asMap = (v: YamlValue | undefined, what: string): Map => {
  assert.ok(typeof v === "object" && v !== null && !Array.isArray(v), `${what} must be a map`);
  return v as Map;
};

describe(`examples: the compose file with a shared store (${runtime})`, () => {
  const compose = asMap(parseYamlLite(readFileSync(`${deployDir}compose.redis.yaml`, "utf8")), "the file");
  const services = asMap(compose.services, "services");
  const stores = Object.entries(services).filter(([, s]) => /^(valkey\/valkey|redis|bitnami\/(valkey|redis)):/.test(String(asMap(s, "a service").image ?? "")));
  const edges = Object.entries(services).filter(([, s]) => asMap(s, "a service").build !== undefined);

  test("compose.redis: one Redis/Valkey service without persistence, with a health check", () => {
    assert.equal(stores.length, 1, `store services: ${stores.map(([n]) => n)}`);
    const [, store] = stores[0]!;
    const s = asMap(store, "the store");
    const command = s.command as string[];
    assert.ok(Array.isArray(command));
    assert.deepEqual(command.slice(command.indexOf("--save"), command.indexOf("--save") + 2), ["--save", ""], "no RDB snapshots");
    assert.deepEqual(command.slice(command.indexOf("--appendonly"), command.indexOf("--appendonly") + 2), ["--appendonly", "no"]);
    const check = asMap(s.healthcheck, "healthcheck").test as string[];
    assert.deepEqual(check.slice(-1), ["ping"]);
  });

  test("compose.redis: two or more edge instances, each built from the Dockerfile, sharing the store they wait for", () => {
    assert.ok(edges.length >= 2, `edge services: ${edges.map(([n]) => n)}`);
    const storeName = stores[0]![0];
    const ports = new Set<string>();
    for (const [name, svc] of edges) {
      const s = asMap(svc, name);
      const build = asMap(s.build, `${name}.build`);
      const root = new URL(`${build.context}/`, `file://${deployDir}`);
      assert.ok(existsSync(new URL(String(build.dockerfile), root)), `${name}: ${build.dockerfile} exists under ${build.context}`);
      assert.deepEqual(asMap(asMap(s.depends_on, `${name}.depends_on`)[storeName], "the store dependency"), { condition: "service_healthy" }, `${name} starts once the store answers`);
      const env = asMap(s.environment, `${name}.environment`) as Record<string, string>;
      const url = new URL(env.HYGIENE_REDIS_URL!);
      assert.equal(url.hostname, storeName, `${name}: HYGIENE_REDIS_URL names the store service`);
      assert.equal(Number(env.HYGIENE_REDIS_INSTANCES), edges.length, `${name}: the insurance limiter's share is limit ÷ the instances there are`);
      // Every variable is one the example reads, and together they are a valid configuration.
      for (const variable of Object.keys(env)) assert.ok(configSource.includes(`"${variable}"`), `${name}: ${variable} is read by examples/edge/config.ts`);
      const config = readEdgeConfig(env);
      assert.equal(config.redisUrl, env.HYGIENE_REDIS_URL);
      // Graceful stop: SIGTERM, and a grace covering the drain and the flush margin.
      assert.equal(s.stop_signal, "SIGTERM");
      const grace = Number(/^(\d+)s$/.exec(String(s.stop_grace_period))?.[1]) * 1000;
      validateLifecycle({ requestTimeoutMs: config.requestTimeoutMs, drainTimeoutMs: config.drainTimeoutMs, preStopDelayMs: config.preStopDelayMs, platformGraceMs: grace, flushMarginMs: 2_000 });
      for (const p of s.ports as string[]) {
        assert.ok(!ports.has(p.split(":")[0]!), `${name}: host port ${p} is not taken twice`);
        ports.add(p.split(":")[0]!);
      }
    }
    // Instances of one service: the same limit and window, or they would not share one budget.
    const limits = new Set(edges.map(([n, s]) => JSON.stringify([asMap(asMap(s, n).environment, n).HYGIENE_RATE_LIMIT, asMap(asMap(s, n).environment, n).HYGIENE_RATE_WINDOW_MS])));
    assert.equal(limits.size, 1, "every instance enforces the same shared limit");
  });

  test("compose.redis: the parser used here refuses what it does not understand", () => {
    assert.throws(() => parseYamlLite("a: &x 1\nb: *x\n"), /unsupported YAML/);
    assert.throws(() => parseYamlLite("a:\n  <<: {}\n"), /merge keys|unsupported/);
    assert.deepEqual(parseYamlLite('s:\n  - "8001:8000"\n  - x # c\nt: ["a", "", \'b\']\n'), { s: ["8001:8000", "x"], t: ["a", "", "b"] });
  });
});
