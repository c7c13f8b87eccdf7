// Headers a service adds to the guard's refusals (CORS for browser clients: a 429 or 503 without
// Access-Control-Allow-Origin reaches a browser's fetch as a network error, so it cannot read
// the status or Retry-After and back off), and what a refusal that replaces a handler's answer
// keeps of it. A refusal's own headers always win.
import type { EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _show } from "../_validate.ts";
import { _settleQuietly } from "../_user_code.ts";
import { _TEXTS } from "./responses.ts";

/**
 * Headers added to every refusal the guard answers (429, 503, 413, 408, a forced drain's 503):
 * a record, or a function of the request returning one (e.g. echoing an allowed `Origin`).
 * The refusal's own headers (`Content-Type`, `Retry-After`, `Connection`, …) win over these.
 */
export type RefusalHeaders = Readonly<Record<string, string>> | ((request: Request) => Readonly<Record<string, string>> | undefined);

/** Adds the service's headers to a refusal; `request` is undefined where none was built. */
export type _AddRefusalHeaders = (res: Response, request: Request | undefined) => Response;

/** Validates `refusalHeaders`; undefined when none are set (the refusal path then does nothing more). */
export function _refusalHeaders(what: string, value: RefusalHeaders | undefined, sink: EventSink): _AddRefusalHeaders | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "function") {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      throw new TypeError(`Cannot ${what} as "refusalHeaders" must be a record of header values or a function of the request: current value is ${_show(value)}`);
    }
    try {
      new Headers(value as Record<string, string>);
    } catch (error) {
      throw new TypeError(`Cannot ${what} as "refusalHeaders" must hold valid header names and values: ${(error as Error).message}`);
    }
    if (Object.keys(value).length === 0) return undefined;
  }
  const fixed = typeof value === "function" ? undefined : value;
  const of = typeof value === "function" ? value : undefined;
  return (res, request) => {
    let extra: Readonly<Record<string, string>> | undefined = fixed;
    if (of !== undefined) {
      if (request === undefined) return res;
      try {
        extra = of(request);
        // A promise (an async function) is no record: its rejection went unhandled and ended
        // the process, its headers never came (a review).
        if (_settleQuietly(extra)) throw new TypeError("refusalHeaders returned a promise (an async function?), not a record");
        if (extra !== undefined && (extra === null || typeof extra !== "object")) throw new TypeError(`refusalHeaders returned ${_show(extra)}, not a record`);
      } catch (error) {
        // The refusal still goes out, without them: the user's function must not turn a 429 into a 500.
        _emit([sink], { type: "fault", source: "refusal-headers", error, failed: "open" });
        return res;
      }
      if (extra === undefined) return res;
    }
    let headers: Headers;
    try {
      headers = new Headers(extra);
    } catch (error) {
      _emit([sink], { type: "fault", source: "refusal-headers", error, failed: "open" });
      return res;
    }
    for (const [name, v] of res.headers) headers.set(name, v);
    // Every refusal's body is its status's generic text (denyResponse): given as the string, so
    // the answer keeps its Content-Length (re-wrapping the body as a stream went out chunked on
    // Node, a stream read a refusal under a storm: the diff review).
    return new Response(_TEXTS[res.status] ?? "Error", { status: res.status, statusText: res.statusText, headers });
  };
}

// The headers an answer the guard put in place does not take from the response it replaces:
// what is about the representation, caching or the connection.
export const _NOT_CARRIED: ReadonlySet<string> = new Set([
  "accept-ranges", "age", "cache-control", "cdn-cache-control", "connection", "content-digest", "content-disposition",
  "content-encoding", "content-language", "content-length", "content-location", "content-range", "content-type", "digest",
  "etag", "expires", "keep-alive", "last-modified", "location", "repr-digest", "retry-after", "set-cookie",
  "surrogate-control", "trailer", "transfer-encoding", "vary",
]);

/**
 * The guard's answer `to`, given the headers of the handler's answer `from` it replaces that
 * are about none of those (CORS, security headers a framework's middleware set), where `to`
 * has none of its own by that name.
 */
export function _carried(from: Response, to: Response): Response {
  let headers: Headers | undefined;
  for (const [name, value] of from.headers) {
    if (_NOT_CARRIED.has(name) || to.headers.has(name)) continue;
    (headers ??= new Headers(to.headers)).append(name, value);
  }
  return headers === undefined ? to : new Response(to.body, { status: to.status, statusText: to.statusText, headers });
}
