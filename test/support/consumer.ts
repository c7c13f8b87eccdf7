// A user's project, made the way a user makes it: the packed tarball unpacked into a scratch
// project's node_modules (what `npm install serve-hygiene` puts there), or the sources through
// an import map (what `deno add jsr:…` resolves to). No network: the packages the tarball
// needs are linked from this repository's node_modules, which `npm ci` filled.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { repoRoot, type RuntimeName } from "./runtime.ts";

export interface Manifest {
  name: string;
  exports: Record<string, { types: string; default: string } | string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const repoModules = join(repoRoot, "node_modules");
const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;

/** The package's code subpaths as its package.json exports them ("serve-hygiene", "serve-hygiene/node", …; not its manifest's own entry). */
export function npmSubpaths(): string[] {
  const pkg = readJson<Manifest>(join(repoRoot, "package.json"));
  return Object.keys(pkg.exports).filter((key) => key !== "./package.json").map((key) => pkg.name + key.slice(1));
}

let packed: { tarball: string } | undefined;

/**
 * Builds and packs the package once per process, in a staging folder of its own (dist/ built
 * there, with the files npm packs beside it), so a parallel build of dist/ cannot race it.
 * With SERVE_HYGIENE_TARBALL set (CI builds once and shares the tarball), that tarball is used.
 */
export function packOnce(): string {
  if (packed !== undefined) return packed.tarball;
  const shared = process.env.SERVE_HYGIENE_TARBALL;
  if (shared) {
    if (!existsSync(shared)) throw new Error(`SERVE_HYGIENE_TARBALL names no file: ${shared}`);
    packed = { tarball: shared };
    return shared;
  }
  const dir = mkdtempSync(join(tmpdir(), "serve-hygiene-pack-"));
  const stage = join(dir, "stage");
  mkdirSync(stage);
  execFileSync("node", ["scripts/build.mjs", "--out", join(stage, "dist")], { cwd: repoRoot, stdio: "pipe" });
  for (const file of ["package.json", "README.md", "LICENSE"]) copyFileSync(join(repoRoot, file), join(stage, file));
  const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], { cwd: stage, encoding: "utf8" });
  const name = (JSON.parse(out) as { filename: string }[])[0]!.filename;
  packed = { tarball: join(dir, name) };
  // Shared by every test file of this process: removed when the process ends (Deno's test
  // runner fires no process "exit", but does fire "unload").
  const remove = () => rmSync(dir, { recursive: true, force: true });
  process.once("exit", remove);
  if (typeof Deno !== "undefined") globalThis.addEventListener("unload", remove);
  return packed.tarball;
}

/** The files in the tarball, as npm would publish them (paths without the `package/` folder). */
export function packedFiles(): string[] {
  const list = execFileSync("tar", ["-tzf", packOnce()], { encoding: "utf8" });
  return list.split("\n").filter((line) => line !== "" && !line.endsWith("/")).map((line) => line.replace(/^package\//, ""));
}

/** Links `name` from this repository's node_modules into `modules` (what npm would have installed). */
function link(modules: string, name: string): void {
  const target = join(repoModules, name);
  if (!existsSync(target)) throw new Error(`${name} is not in node_modules: run npm ci`);
  const at = join(modules, name);
  if (existsSync(at)) return;
  mkdirSync(dirname(at), { recursive: true });
  symlinkSync(target, at, "dir");
}

/**
 * What `npm install` puts beside the package: its dependencies and the peers those require
 * (npm installs required peers); with `peers`, the package's own optional peers too, as a
 * user who wants every subpath adds them.
 */
export function installedWith(pkg: Manifest, peers: boolean): string[] {
  const names = new Set<string>();
  for (const dep of Object.keys(pkg.dependencies ?? {})) {
    names.add(dep);
    const depPkg = readJson<Manifest>(join(repoModules, dep, "package.json"));
    for (const peer of Object.keys(depPkg.peerDependencies ?? {})) {
      if (depPkg.peerDependenciesMeta?.[peer]?.optional !== true) names.add(peer);
    }
  }
  if (peers) for (const peer of Object.keys(pkg.peerDependencies ?? {})) names.add(peer);
  return [...names].sort();
}

export interface Scratch {
  readonly dir: string;
  readonly installed: string[];
  write(name: string, text: string): string;
  remove(): void;
}

function scratchDir(prefix: string): Pick<Scratch, "dir" | "write" | "remove"> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    write(name, text) {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A project with the packed tarball installed (unpacked into node_modules/serve-hygiene). */
export function npmProject(options: { peers: boolean; types?: string[] }): Scratch {
  const tarball = packOnce();
  const base = scratchDir("serve-hygiene-consumer-");
  const modules = join(base.dir, "node_modules");
  const own = join(modules, "serve-hygiene");
  mkdirSync(own, { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", own, "--strip-components=1"]);
  const pkg = readJson<Manifest>(join(own, "package.json"));
  const installed = installedWith(pkg, options.peers);
  for (const name of [...installed, ...(options.types ?? [])]) link(modules, name);
  base.write("package.json", JSON.stringify({ name: "consumer", private: true, type: "module", dependencies: { "serve-hygiene": `file:${tarball}` } }, null, 2));
  // Deno reads the project's node_modules (as after `npm install`), with the setting the README asks for.
  base.write("deno.json", JSON.stringify({ nodeModulesDir: "manual", unstable: ["no-legacy-abort"] }, null, 2));
  return { ...base, installed };
}

/**
 * A Deno project that imports the sources as JSR would serve them: an import map from the
 * JSR names to src/ (deno.json's exports) and the package's own imports map for its peers
 * (npm:, read from the linked node_modules).
 */
export function jsrProject(): Scratch & { readonly name: string } {
  const deno = readJson<{ name: string; exports: Record<string, string>; imports?: Record<string, string> }>(join(repoRoot, "deno.json"));
  const pkg = readJson<Manifest>(join(repoRoot, "package.json"));
  const base = scratchDir("serve-hygiene-jsr-");
  const imports: Record<string, string> = {};
  for (const [key, source] of Object.entries(deno.exports)) imports[deno.name + key.slice(1)] = join(repoRoot, source);
  for (const [name, target] of Object.entries(deno.imports ?? {})) if (target.startsWith("npm:")) imports[name] = target;
  const installed = installedWith(pkg, true);
  // deno check reads @types/node for npm packages' node: imports (Deno fetches it itself when it manages node_modules).
  for (const name of [...installed, "@types/node"]) link(join(base.dir, "node_modules"), name);
  base.write("deno.json", JSON.stringify({ nodeModulesDir: "manual", unstable: ["no-legacy-abort"], imports }, null, 2));
  return { ...base, installed, name: deno.name };
}

/** The command that runs a program file under a runtime, from the project's folder. */
export function runCommand(name: RuntimeName, file: string, denoFlags: string[] = ["-A"]): [string, string[]] {
  if (name === "node") return [process.platform === "win32" ? "node.exe" : "node", [file]];
  if (name === "deno") return [join(repoModules, ".bin", "deno"), ["run", ...denoFlags, file]];
  return [join(repoModules, ".bin", "bun"), ["run", file]];
}

/** Runs a program to its end (bounded); resolves with its output. */
export function runToEnd(cwd: string, [cmd, args]: [string, string[]], timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${cmd} ${args.join(" ")} did not end within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a server program, waits for its "listening on <url>" line; `stop` sends SIGTERM by PID and waits for the exit. */
export function startServer(cwd: string, [cmd, args]: [string, string[]], timeoutMs = 30_000) {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let ended = false;
  const exited = new Promise<number | string>((resolve) => child.on("exit", (code, signal) => ((ended = true), resolve(code ?? signal ?? -1))));
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line within ${timeoutMs} ms\n${stdout}\n${stderr}`)), timeoutMs);
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) (clearTimeout(timer), resolve(m[1]!));
    });
    void exited.then((code) => (clearTimeout(timer), reject(new Error(`exited (${code}) before listening\n${stdout}\n${stderr}`))));
  });
  return {
    url,
    output: () => ({ stdout, stderr }),
    /** SIGTERM to this child only; resolves with its exit code. */
    async stop(): Promise<number | string> {
      if (!ended) process.kill(child.pid!, "SIGTERM");
      const timer = setTimeout(() => !ended && process.kill(child.pid!, "SIGKILL"), timeoutMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The README's first-screen server for a runtime: the Install section's code block that imports its adapter. */
export function readmeServer(name: RuntimeName): string {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  const install = /^## Install\n([\s\S]*?)^## /m.exec(readme);
  if (!install) throw new Error("README.md has no Install section before the next section");
  for (const m of install[1]!.matchAll(/^```(?:ts|js)\n([\s\S]*?)^```$/gm)) {
    if (new RegExp(`from "[^"]*serve-hygiene/${name}"`).test(m[1]!)) return m[1]!;
  }
  throw new Error(`README.md's Install section has no server importing serve-hygiene/${name}`);
}

/** The README server on port 0 (the tests never take a fixed port). */
export const onPortZero = (code: string): string => {
  const out = code.replace(/\bport: \d+/, "port: 0");
  if (out === code) throw new Error("the README server names no port to replace");
  return out;
};
