// Which requests the process-wide gates never refuse: health probes and metrics scrapes.
// A liveness probe refused by a tripped memory ceiling invites a restart loop, and metrics
// that go dark while the process sheds hide exactly what an operator needs to see.
import { _show } from "../_validate.ts";
import type { EventSink } from "../events.ts";
import { _emit } from "../_emit.ts";
import { _settleQuietly } from "../_user_code.ts";
import { _oddAuthority, _pathStart } from "./_url_path.ts";

/**
 * Requests that skip the process-wide gates (draining, memory ceiling, load monitor,
 * concurrency limit): a list of exact paths (`"/healthz"`; no query, no prefix match), or a
 * predicate over the request (one that throws, or returns a promise, exempts nothing: the
 * request meets every gate, and a fault is reported). They still meet the per-client gates (keyed rate limits,
 * per-key in-flight cap), the framing check, the body cap and the request timeout.
 */
export type ExemptOption = readonly string[] | ((request: Request) => boolean);

/**
 * The matcher for an {@linkcode ExemptOption}, validated: undefined when nothing is exempt.
 * A path list is matched against the request URL's path without parsing the URL (no URL
 * object, no allocation): the path of an absolute URL starts at the first "/" after "//".
 */
export function _exemptMatcher(option: ExemptOption | undefined, what = "create guard", sink?: EventSink): ((request: Request) => boolean) | undefined {
  if (option === undefined) return undefined;
  if (typeof option === "function") {
    // The user's predicate fails closed: the request is not exempt, it meets every gate.
    const fault = (error: unknown) => _emit([sink], { type: "fault", source: "exempt", error, failed: "closed" });
    return (request) => {
      let exempt: unknown;
      try {
        exempt = option(request);
      } catch (error) {
        fault(error);
        return false;
      }
      // An async predicate's promise is not a yes (it is always truthy).
      if (_settleQuietly(exempt)) {
        fault(new TypeError('"exempt" must return a boolean: it returned a promise (an async function?)'));
        return false;
      }
      return Boolean(exempt);
    };
  }
  if (!Array.isArray(option)) {
    throw new TypeError(`Cannot ${what} as "exempt" must be an array of paths or a function: current value is ${_show(option)}`);
  }
  const paths = option.map((path: unknown, i) => {
    if (typeof path !== "string" || !path.startsWith("/") || /[?#\s]/.test(path)) {
      throw new RangeError(`Cannot ${what} as "exempt[${i}]" must be a path starting with "/" (no query): current value is ${_show(path)}`);
    }
    return path;
  });
  if (paths.length === 0) return undefined;
  return (request) => {
    const url = request.url;
    // The path starts after the host — unless the runtime left the URL relative (Bun, for a
    // request with no or an invalid Host): read past a host there, "/abc/api/healthz" passed
    // as "/healthz" (a review).
    // A URL neither absolute nor a path (a CONNECT's "host:443/path") is no exempt path.
    const start = _pathStart(url);
    if (start < 0) return false;
    for (const path of paths) {
      const end = start + path.length;
      // Nor one whose host part a URL parser ends sooner (_url_path.ts: Deno's "http://evil?x/healthz"
      // is "/" to a router that parses it). A dot segment cannot make a path match.
      if (url.startsWith(path, start) && (end === url.length || url.charCodeAt(end) === 63 /* ? */)) return !_oddAuthority(url, start);
    }
    return false;
  };
}
