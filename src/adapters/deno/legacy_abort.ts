import type { Logger } from "../../core/mod.ts";

// Without `"unstable": ["no-legacy-abort"]` Deno.serve aborts request.signal after every
// successful response (RUNTIMES.md), so an aborted signal no longer means "the client left".
// The adapter looks at the first delivered answers in the process: one whose request's
// signal was not aborted by then says the legacy behaviour is off; EVIDENCE in a row that
// were say it is on, and the user is told once how to turn it off. One is not enough: a
// client that leaves mid-answer aborts the signal too (a review saw the warning with the
// setting on, the first answer a stream its client left). After that nothing is looked at.

/** The record the adapter logs once when Deno runs with the legacy abort behaviour. */
export const LEGACY_ABORT_WARNING = {
  level: "warn",
  msg: "Deno aborts request.signal after every response (legacy behaviour), so a request's signal cannot tell that the client left",
  fix: 'add "unstable": ["no-legacy-abort"] to deno.json, or run deno with --unstable-no-legacy-abort',
} as const;

/** Delivered answers in a row whose signal was aborted that mean Deno's legacy behaviour. */
const EVIDENCE = 3;

let _decided = false;
let _aborted = 0;

/**
 * Looks at delivered answers until it has decided; warns once when EVIDENCE in a row had their
 * signal aborted by then. `info.completed` is read only until then: it is a getter, read on
 * every request it would cost every request.
 */
export function _watchLegacyAbort(request: Request, info: { readonly completed?: Promise<void> }, log: Logger): void {
  if (_decided) return;
  const completed = info.completed;
  if (completed === undefined) return;
  completed.then(() => {
    if (_decided) return;
    if (!request.signal.aborted) {
      _decided = true; // an answer delivered with its signal intact: no legacy abort
      return;
    }
    if (++_aborted < EVIDENCE) return;
    _decided = true;
    log({ ...LEGACY_ABORT_WARNING });
  }, () => {}); // not delivered (the client left): the next answer decides
}
