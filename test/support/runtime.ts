// Which runtime a test runs under, and how to start a TypeScript file as a real child
// process under any of the three. Tests may sniff the runtime; the library never does.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export type RuntimeName = "node" | "deno" | "bun";

export const runtime: RuntimeName = typeof Deno !== "undefined" ? "deno" : "Bun" in globalThis ? "bun" : "node";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));

const localBin = (name: string) => fileURLToPath(new URL(`../../node_modules/.bin/${name}`, import.meta.url));

/** The command line that runs `file` (relative to the repo root) under `name`. */
export function tsCommand(file: string, name: RuntimeName = runtime): [string, string[]] {
  switch (name) {
    case "node":
      return [runtime === "node" ? process.execPath : "node", ["--import", "tsx", file]];
    case "deno":
      return [localBin("deno"), ["run", "-A", file]];
    case "bun":
      return [localBin("bun"), ["run", file]];
  }
}

export interface Child {
  readonly process: ChildProcess;
  readonly pid: number;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout line matching `re` (parsed as JSON when it is JSON). */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code (or the signal name) once the child ends. */
  readonly exited: Promise<number | string>;
  /** Ends the child (and only it) by PID if it is still running. */
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `file` under `name` as a child process with extra environment variables. */
export function startChild(file: string, env: Record<string, string> = {}, name: RuntimeName = runtime): Child {
  const [cmd, args] = tsCommand(file, name);
  const child = spawn(cmd, args, {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  const waiters: { re: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    // Whole lines only: the last piece has no newline yet (a line split across chunks).
    for (const line of out.split("\n").slice(0, -1)) {
      for (const w of waiters.splice(0)) {
        if (w.re.test(line)) w.resolve(line);
        else waiters.push(w);
      }
    }
  });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  let ended = false;
  const exited = new Promise<number | string>((resolve) =>
    child.on("exit", (code, signal) => {
      ended = true;
      resolve(code ?? signal ?? -1);
    })
  );
  return {
    process: child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForLine(re, timeoutMs = 30_000) {
      const hit = out.split("\n").slice(0, -1).find((line) => re.test(line));
      if (hit !== undefined) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line matching ${re} within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`)),
          timeoutMs,
        );
        waiters.push({ re, resolve: (line) => (clearTimeout(timer), resolve(line)) });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`child exited before a line matching ${re}; stdout:\n${out}\nstderr:\n${err}`));
        });
      });
    },
    kill(signal = "SIGKILL") {
      if (!ended) process.kill(child.pid!, signal);
    },
  };
}

/** The child's stdout lines that are JSON objects with `key`. */
export function records(child: Child, key: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of child.stdout().split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const record = JSON.parse(line) as Record<string, unknown>;
      if (key in record) out.push(record);
    } catch {
      // a partial line still being written
    }
  }
  return out;
}
