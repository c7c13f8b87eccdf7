import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { repoRoot, runtime } from "../support/runtime.ts";

// Deno aborts request.signal after every successful response unless the no-legacy-abort
// unstable flag is on (RUNTIMES.md): the Deno adapter tells the user, once, how to turn it
// on. The fixture runs as a real Deno child without the project's deno.json (which enables
// the flag), so it sees what a consumer's project without the setting sees.
function runFixture(flags: string[], env: Record<string, string> = {}): Promise<{ records: { level: string; msg: string; fix?: string }[] }> {
  const deno = join(repoRoot, "node_modules", ".bin", "deno");
  return new Promise((resolve, reject) => {
    execFile(deno, ["run", "-A", "--no-config", ...flags, "test/fixtures/deno_legacy_abort.ts"], { cwd: repoRoot, timeout: 30_000, env: { ...process.env, NO_COLOR: "1", ...env } }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`${error.message}\n${stderr}`));
      const line = stdout.split("\n").find((l) => l.startsWith("{"));
      if (line === undefined) return reject(new Error(`no summary line:\n${stdout}\n${stderr}`));
      resolve(JSON.parse(line));
    });
  });
}

// Deno-only: the fixture is the Deno adapter in a Deno child; the other runners would start
// the same child again.
describe(`deno adapter: legacy abort warning (${runtime})`, { skip: runtime !== "deno" && "the Deno adapter runs under Deno" }, () => {
  test(`deno adapter: with Deno's legacy abort, one warning for the process names no-legacy-abort (${runtime})`, { timeout: 40_000 }, async () => {
    const { records } = await runFixture([]);
    assert.equal(records.length, 1, JSON.stringify(records));
    assert.match(records[0]!.msg, /request\.signal/);
    assert.match(records[0]!.fix ?? "", /"unstable": \["no-legacy-abort"\]/);
    assert.match(records[0]!.fix ?? "", /--unstable-no-legacy-abort/);
  });

  test(`deno adapter: with no-legacy-abort on, no warning (${runtime})`, { timeout: 40_000 }, async () => {
    const { records } = await runFixture(["--unstable-no-legacy-abort"]);
    assert.deepEqual(records, []);
  });

  test(`deno adapter: a first answer whose client left mid-stream decides nothing: no warning with no-legacy-abort on, one without (${runtime})`, { timeout: 40_000 }, async () => {
    assert.deepEqual((await runFixture(["--unstable-no-legacy-abort"], { LEAVE_FIRST: "1" })).records, []);
    assert.equal((await runFixture([], { LEAVE_FIRST: "1" })).records.length, 1);
  });

  // A review: an SSE service's first answers — streams whose handlers read their signal and
  // whose clients left — were three aborted signals in a row, and the warning told a process
  // with the setting on to add it.
  test(`deno adapter: three first answers whose clients left mid-stream, their handlers reading the signal, decide nothing (${runtime})`, { timeout: 40_000 }, async () => {
    assert.deepEqual((await runFixture(["--unstable-no-legacy-abort"], { LEAVE_FIRST: "3" })).records, []);
    assert.equal((await runFixture([], { LEAVE_FIRST: "3" })).records.length, 1);
  });
});
