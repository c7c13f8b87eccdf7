import type { Clock } from "../clock.ts";

/** The OS stop signals the core reacts to. */
export type ShutdownSignal = "SIGTERM" | "SIGINT";

/** One structured log line. */
export interface LogRecord {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  [field: string]: unknown;
}

/** Where the core writes the few lines it has to say (failed signal installs, failing cleanups). */
export type Logger = (record: LogRecord) => void;

/**
 * A JSON replacer for log records: an error as its name, message and cause (no stack: a line a
 * record), a BigInt as its digits, an object inside itself as "[circular]". JSON.stringify threw
 * on the last two, and the line was lost (a logs review: a handler throwing a circular object
 * got its 500 and no log line). Only the path from the record down is checked (`this` is the
 * object holding `value`), so an object met twice side by side is written twice.
 */
function _replacer(): (this: unknown, key: string, value: unknown) => unknown {
  const path: unknown[] = [];
  return function (this: unknown, _key: string, value: unknown) {
    if (typeof value === "bigint") return value.toString();
    if (value === null || typeof value !== "object") return value;
    while (path.length > 0 && path[path.length - 1] !== this) path.pop();
    if (path.includes(value)) return "[circular]";
    path.push(value);
    if (!(value instanceof Error)) return value;
    const shown: Record<string, unknown> = { name: value.name, message: value.message };
    const cause = (value as { cause?: unknown }).cause;
    // fetch's "fetch failed" says why only in its cause (ECONNREFUSED).
    if (cause !== undefined) shown.cause = cause;
    // Its fields are read from `shown`: that is the holder below it on the path.
    path.push(shown);
    return shown;
  };
}

/** The default logger: one JSON line per record on the console. */
export const consoleLogger: Logger = (record) => {
  let line: string;
  try {
    line = JSON.stringify(record, _replacer());
  } catch {
    // A getter that throws, a toJSON that does: the line still says what happened.
    line = JSON.stringify({ level: record.level, msg: record.msg, unserializable: true });
  }
  if (record.level === "error" || record.level === "warn") console.error(line);
  else console.log(line);
};

/**
 * What the runtime gives the process, supplied by an adapter. A serverless handler has no
 * Host at all, and the core works without one.
 */
export interface Host {
  /** Monotonic time and timers; timers may be unref'd so samplers never hold the process open. */
  readonly clock: Clock;
  /** Resident set size in bytes, or undefined where the runtime cannot tell. Read on a timer, never per request. */
  rss(): number | undefined;
  /**
   * Live memory in bytes: what the runtime's heaps still hold (V8: heap used + external,
   * array buffers included). Unlike RSS on Node and Deno it falls once a collection frees
   * memory. Optional (Bun has none: its RSS falls by itself): without it the memory ceiling
   * decides on RSS alone.
   */
  liveBytes?(): number | undefined;
  /** Runs a full garbage collection, where the runtime lets the process ask for one. */
  collectGarbage?(): void;
  /**
   * CPU time the process has used so far, in ms (user + system, every thread). Optional: the
   * adaptive concurrency limit reads it once a window to tell work queued for the CPU from work
   * that waits; without it (and without a load monitor) every slower window counts as queueing.
   */
  cpuMs?(): number | undefined;
  /**
   * The CPU the process may use, in cores, where a quota limits it (a Linux cgroup's: 0.5 for
   * half a core); undefined when there is none or it cannot be read. Read once, with `cpuMs`.
   */
  cpuCores?(): number | undefined;
  /**
   * Installs `listener` for SIGTERM and Ctrl-C (SIGINT). A signal whose install fails is
   * logged and simply never fires; the call itself never throws. Returns an uninstaller.
   */
  onShutdownSignal(listener: (signal: ShutdownSignal) => void): () => void;
  /** Where the core logs. @default consoleLogger */
  readonly log?: Logger;
  /** Ends the process with `code`, for hosts that own it (used only when asked to exit after the drain). */
  exit?(code: number): void;
  /**
   * Sets the code the process ends with when it ends on its own (the runtime's exit-code
   * setting), so a forced or failed drain is reported without ending it there and then.
   */
  setExitCode?(code: number): void;
  /**
   * A server starts (before it listens): what holds the process open besides its servers (the
   * IPC channel of a node:cluster worker or a forked child) is held again while any serves —
   * a worker's listen waits on its primary's answer there.
   */
  attach?(): void;
  /**
   * A server's drain has ended (or its start failed): once no server started through this
   * process's Hosts is left, that channel is let go, so the process ends on its own as a
   * standalone one does.
   */
  detach?(): void;
  /**
   * The runtime's Response is native and cloning one is cheaper than building it (Bun,
   * Deno): the guard's refusals are clones of answers built once. Not on Node, where
   * @hono/node-server's lightweight Response would build the full one to clone it.
   */
  readonly cloneResponses?: boolean;
}
