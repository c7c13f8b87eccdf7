import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runtimeMentions } from "./support/purity.ts";

const core = fileURLToPath(new URL("../src/core", import.meta.url));
const testing = fileURLToPath(new URL("../src/testing", import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

describe("purity", () => {
  test("purity: the rule catches each runtime mention", () => {
    for (const line of [
      "const x = Deno.env.get('A');",
      "Bun.serve({ fetch })",
      "process.exit(1)",
      'import { createServer } from "node:http";',
      "const fs = await import('node:fs');",
      'const os = require("node:os");',
      "// a comment that says process.on is still caught",
    ]) {
      assert.equal(runtimeMentions(line).length, 1, line);
    }
    assert.deepEqual(runtimeMentions("const processed = request.url; // DenoX, Bunny"), []);
  });

  test("purity: no file under src/core or src/testing mentions Deno., Bun., process. or imports node:*", () => {
    const all = [...files(core), ...files(testing)];
    assert.ok(all.length > 5, "src/core has files to check");
    const offenders = all.flatMap((path) =>
      runtimeMentions(readFileSync(path, "utf8")).map((m) => `${path}:${m.line}: ${m.what}: ${m.text}`)
    );
    assert.deepEqual(offenders, []);
  });
});
