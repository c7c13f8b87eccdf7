import type { Logger } from "../../core/mod.ts";

// Without `"unstable": ["no-legacy-abort"]` Deno.serve aborts request.signal after every
// successful response (RUNTIMES.md), so an aborted signal no longer means "the client left".
// The adapter looks at the first delivered answers in the process whose signal nothing read
// before the answer was delivered: Deno aborts such a signal only with the legacy behaviour (a
// client that leaves mid-answer aborts a signal that was read, and only such a one). One
// whose signal is intact then says the legacy behaviour is off; EVIDENCE in a row aborted say
// it is on, and the user is told once how to turn it off. Counted whatever read the signal, a
// service whose first answers were streams whose clients left (an SSE service's start) was
// told to add the setting it had (a review). After that nothing is looked at; and nothing
// after WATCH_MOST answers whose signal was read (Deno warns by itself when a signal that was
// read is aborted so).

/** The record the adapter logs once when Deno runs with the legacy abort behaviour. */
export const LEGACY_ABORT_WARNING = {
  level: "warn",
  msg: "Deno aborts request.signal after every response (legacy behaviour), so a request's signal cannot tell that the client left",
  fix: 'add "unstable": ["no-legacy-abort"] to deno.json, or run deno with --unstable-no-legacy-abort',
} as const;

/** Delivered answers in a row whose signal was aborted that mean Deno's legacy behaviour. */
const EVIDENCE = 3;
/** The most answers looked at (each watched request's signal read is watched until its answer is delivered). */
const WATCH_MOST = 64;

let _decided = false;
let _aborted = 0;
let _watched = 0;
/** The Request's own `signal` getter (a watch defines one on the request that counts reads, then removes it). */
const _signalOf = Object.getOwnPropertyDescriptor(Request.prototype, "signal")?.get as ((this: Request) => AbortSignal) | undefined;

/**
 * Looks at delivered answers of bodiless requests (a request with a body is handed on as another
 * Request, which may read this one's signal) until it has decided; warns once when EVIDENCE in
 * a row, their signal read by nothing before, had it aborted by then. `info.completed` is read
 * only until then: it is a getter, read on every request it would cost every request.
 */
export function _watchLegacyAbort(request: Request, info: { readonly completed?: Promise<void> }, log: Logger): void {
  if (_decided) return;
  const signalOf = _signalOf;
  const completed = info.completed;
  if (completed === undefined || signalOf === undefined) return;
  if (++_watched > WATCH_MOST) {
    _decided = true;
    return;
  }
  let read = false;
  Object.defineProperty(request, "signal", {
    configurable: true,
    get(this: Request) {
      read = true;
      return signalOf.call(this);
    },
  });
  const done = () => void delete (request as { signal?: AbortSignal }).signal;
  completed.then(() => {
    done();
    if (_decided || read) return;
    if (!signalOf.call(request).aborted) {
      _decided = true; // an answer delivered with its signal intact: no legacy abort
      return;
    }
    if (++_aborted < EVIDENCE) return;
    _decided = true;
    log({ ...LEGACY_ABORT_WARNING });
  }, done); // not delivered (the client left): the next answer decides
}
