// User code the library calls while serving — event sinks, loggers, key functions, `exempt` —
// is typed synchronous, but an async function type-checks there too (a `() => void` slot
// takes one). Its failure must never reach the request path or the process: a throw is
// caught where it is called, a returned promise gets a rejection handler (an unhandled
// rejection ends the process on Node, Deno and Bun), and a result of the wrong type is read
// as a failure, not as a value (a promise for a key would count every request under a new key).
import type { Logger, LogRecord } from "./host/host.ts";

/** Gives `result` a rejection handler when it is a promise (a thenable); returns whether it was. */
export function _settleQuietly(result: unknown, onRejected: (error: unknown) => void = () => {}): boolean {
  if (result === null || (typeof result !== "object" && typeof result !== "function")) return false;
  if (typeof (result as PromiseLike<unknown>).then !== "function") return false;
  Promise.resolve(result).catch(onRejected);
  return true;
}

/**
 * The key a key function returned — a string, or a finite number read as its string (a tenant
 * id) — or a TypeError naming what it returned instead (a promise among them, given a rejection
 * handler): the caller fails closed as for a throw.
 */
export function _keyResult(key: unknown, what: string): string {
  if (typeof key === "string") return key;
  if (typeof key === "number" && Number.isFinite(key)) return String(key);
  const promise = _settleQuietly(key);
  throw new TypeError(`${what} must return a string: it returned ${promise ? "a promise (an async function?)" : key === null ? "null" : typeof key === "number" ? String(key) : typeof key}`);
}

/**
 * Whether a rate rule's skip predicate skips: it must return a boolean. Anything else (a promise
 * from an async function among them, given a rejection handler) is a TypeError, and the caller
 * fails closed as for a throw: read as true, a promise would skip every request.
 */
export function _skipResult(skip: unknown, what: string): boolean {
  if (typeof skip === "boolean") return skip;
  const promise = _settleQuietly(skip);
  throw new TypeError(`${what} must return a boolean: it returned ${promise ? "a promise (an async function?)" : skip === null ? "null" : typeof skip}`);
}

const SAFE = Symbol("serve-hygiene safe logger");

/**
 * `log`, made unable to fail its caller: a line it cannot write (it throws, or rejects) is
 * dropped — a logger is called from a shutdown, a timer or a refusal, none of which may fail
 * because of it. Idempotent.
 */
export function _safeLogger(log: Logger): Logger {
  if ((log as { [SAFE]?: true })[SAFE] === true) return log;
  const safe: Logger = (record: LogRecord) => {
    try {
      _settleQuietly(log(record) as unknown);
    } catch {
      // nowhere left to report it
    }
  };
  (safe as { [SAFE]?: true })[SAFE] = true;
  return safe;
}
