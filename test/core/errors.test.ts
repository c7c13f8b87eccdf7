// The errors' names survive a minifier: a bundler that renames classes (esbuild, bun build
// --minify) left `error.name` as the mangled class name ("Pe"), in logs and String(error).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { repoRoot, runtime } from "../support/runtime.ts";
import { PUBLIC_SURFACE } from "../support/surface.ts";

type Ctor = new (...args: never[]) => Error;

// One instance of every error class the root exports.
const MAKE: Record<string, (C: Ctor) => Error> = {
  HygieneError: (C) => new (C as unknown as new (code: string, message: string) => Error)("X", "x"),
  BodyTooLargeError: (C) => new (C as unknown as new (limit: number) => Error)(10),
  FlowQueueFullError: (C) => new (C as unknown as new (d: object) => Error)({ worker: 0, limit: 1 }),
  PeerBusyError: (C) => new (C as unknown as new (d: object) => Error)({ retryAfterMs: 1, limit: 1 }),
  RateLimitedError: (C) => new (C as unknown as new (d: object) => Error)({ retryAfterMs: 1, limit: 1 }),
  ServeError: (C) => new (C as unknown as new (kind: string, cause: unknown) => Error)("io", new Error("x")),
};

describe(`errors (${runtime})`, () => {
  test("every error keeps its class's name in a minified bundle", { timeout: 60_000 }, async () => {
    const classes = PUBLIC_SURFACE["."]!.filter((n) => /^[A-Z]\w*Error$/.test(n));
    assert.deepEqual(classes.slice().sort(), Object.keys(MAKE).sort(), "an exported error this test does not make");
    const out = await build({ entryPoints: [join(repoRoot, "src/mod.ts")], bundle: true, minify: true, format: "esm", platform: "neutral", write: false, logLevel: "silent" });
    const dir = mkdtempSync(join(tmpdir(), "sh-min-"));
    try {
      const file = join(dir, "mod.mjs");
      writeFileSync(file, out.outputFiles[0]!.text);
      const mod = (await import(pathToFileURL(file).href)) as Record<string, Ctor>;
      // The bundle is minified: the classes' own names are not theirs.
      assert.notEqual(mod.RateLimitedError!.name, "RateLimitedError");
      for (const name of classes) {
        const error = MAKE[name]!(mod[name]!);
        assert.equal(error.name, name);
        assert.ok(String(error).startsWith(`${name}: `), String(error));
        // A user's subclass (unminified, as the user's own code would be named) keeps its name.
        const Sub = { [`My${name}`]: class extends (mod[name]! as new (...args: never[]) => Error) {} }[`My${name}`]!;
        assert.equal(MAKE[name]!(Sub as Ctor).name, `My${name}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
