// What the example app answers when a route throws. Hono's default error handler prints a
// multi-line stack for every error, and most errors here are expected outcomes any client can
// cause (a body past its cap, a request past its deadline, a client that left): answered
// quietly, they cannot fill the log. Only an unexpected error is logged, as one JSON line.
import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { denyResponse, isBodyTooLargeError, type Logger } from "../../src/mod.ts";
import { hygieneContext } from "../../src/hono/mod.ts";

/** The app's `onError`: typed errors to their answers, quietly; anything else logged once. */
export function edgeErrorHandler(log: Logger): ErrorHandler {
  return (error: Error, c: Context) => {
    // The body passed its cap while the route read it: the guard answers 413 (and counts it).
    if (isBodyTooLargeError(error)) return denyResponse(413, { close: true });
    // The request was given up (its deadline: the guard answered 408; its client left; a forced
    // drain): the route's failure is the expected reaction to its signal, and nobody reads this.
    if (hygieneContext(c)?.signal.aborted === true) return denyResponse(503, { close: true });
    // Hono's own client errors (a malformed body a route asked it to parse): its answer.
    if (error instanceof HTTPException && error.status < 500) return error.getResponse();
    log({ level: "error", msg: "handler failed", method: c.req.method, path: c.req.path, error });
    return denyResponse(500);
  };
}
