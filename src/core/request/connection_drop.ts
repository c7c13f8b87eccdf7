// The core's word to an adapter that a response must end its connection, even where the
// runtime would keep it (Deno reads an unread request body to its end whatever the answer
// said, so a client trickling that body keeps its connection for as long as it likes). The
// mark travels on the Response itself under a registry symbol, so two copies of the package
// agree and no module holds state.

const DROP: unique symbol = Symbol.for("serve-hygiene.dropConnection") as never;

/** `true`: always dropped; `"upload"`: a refusal of an unread upload, dropped where the adapter drops those. */
type _Marked = Response & { [DROP]?: true | "upload" };

function _mark(response: Response, kind: true | "upload"): Response {
  response.headers.set("connection", "close");
  (response as _Marked)[DROP] = kind;
  return response;
}

/**
 * Marks `response` as the last one on its connection: it carries `Connection: close`, and an
 * adapter whose runtime would otherwise go on reading the request body ends the connection
 * after it. Returns the same response.
 *
 * @example
 * ```ts
 * import { dropConnectionAfter, dropsConnection } from "./connection_drop.ts";
 * const res = dropConnectionAfter(new Response("Request Timeout", { status: 408 }));
 * console.assert(dropsConnection(res) && res.headers.get("connection") === "close");
 * ```
 */
export function dropConnectionAfter(response: Response): Response {
  return _mark(response, true);
}

/**
 * Whether `response` was marked with {@linkcode dropConnectionAfter}.
 *
 * @example
 * ```ts
 * import { dropsConnection } from "./connection_drop.ts";
 * console.assert(!dropsConnection(new Response("ok")));
 * ```
 */
export function dropsConnection(response: Response): boolean {
  return (response as _Marked)[DROP] === true;
}

/**
 * Marks a refusal (a 429, a 503) given to a request whose upload it leaves unread, over 64 KiB
 * or of unknown length: it carries `Connection: close`, and an adapter whose runtime would read
 * the rest first ends the connection after it — as it does the body cap's 413, and only where
 * it does (Deno's `dropUnreadBody`). Returns the same response.
 */
export function _refusingUpload(response: Response): Response {
  return _mark(response, "upload");
}

/** Whether `response` was marked with {@linkcode _refusingUpload}. */
export function _refusesUpload(response: Response): boolean {
  return (response as _Marked)[DROP] === "upload";
}
