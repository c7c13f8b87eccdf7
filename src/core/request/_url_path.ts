// The path of a request's URL string as the guard reads it (without building a URL object), and
// when a URL parser would read another one. Deno hands the request target as the client wrote
// it (Node and Bun normalise it): `new URL()` reads "http://evil?x/healthz" (absolute-form, or a
// Host of "evil?x") as the path "/", where the first "/" after the host says "/healthz", and
// "/a/../login" as "/login". A router that parses the URL and the guard then disagreed on the
// route: a probe path skipped the shedding gates for the "/" handler, a route's lowered body cap
// was not applied to its own handler (a review).

/**
 * Where the path starts: after the host of an absolute URL (whatever its scheme's case: Deno
 * hands "HTTP://evil/login" over as written, and a lowercase-only check read it as no path, a
 * review), or 0 in a relative one (Bun may leave "/x"); -1 for neither (a CONNECT's "host:443/path").
 */
export function _pathStart(url: string): number {
  if (url.charCodeAt(0) === 47 /* / */) return 0;
  const host = url.indexOf("://");
  return host === -1 ? -1 : url.indexOf("/", host + 3);
}

/** The path from `start` to the query or fragment. */
export function _pathAt(url: string, start: number): string {
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) return url.slice(start, i);
  }
  return url.slice(start);
}

/** Whether the host part before `start` holds what ends it for a URL parser ("?", "#", "\"). */
export function _oddAuthority(url: string, start: number): boolean {
  for (let i = url.indexOf("://") + 3; i > 2 && i < start; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */ || c === 92 /* \ */) return true;
  }
  return false;
}

/** Whether a URL parser may read another path than `path` (read from `start` of `url`, decoded): an odd host part, a dot segment, a backslash. */
export function _ambiguousPath(url: string, start: number, path: string): boolean {
  return _dotSegment(path) || path.includes("\\") || _oddAuthority(url, start);
}

/** Whether `path` has a "." or ".." segment (not a name starting with a dot: "/.well-known"). */
function _dotSegment(path: string): boolean {
  for (let i = path.indexOf("/."); i !== -1; i = path.indexOf("/.", i + 2)) {
    const next = path.charCodeAt(i + 2);
    if (Number.isNaN(next) || next === 47 /* / */) return true;
    if (next === 46 /* . */) {
      const after = path.charCodeAt(i + 3);
      if (Number.isNaN(after) || after === 47) return true;
    }
  }
  return false;
}

/** The path a URL parser reads ("/" for a URL it refuses). */
export function _parsedPath(url: string): string {
  try {
    return new URL(url, "http://localhost").pathname;
  } catch {
    return "/";
  }
}
