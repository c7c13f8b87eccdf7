import type { Logger } from "../../core/mod.ts";

// Without `"unstable": ["no-legacy-abort"]` Deno.serve aborts request.signal after every
// successful response (RUNTIMES.md), so an aborted signal no longer means "the client left".
// The adapter looks at the first delivered answer in the process: if its request's signal
// was aborted by then, the legacy behaviour is on and the user is told once how to turn it
// off. After that first answer nothing more is looked at.

/** The record the adapter logs once when Deno runs with the legacy abort behaviour. */
export const LEGACY_ABORT_WARNING = {
  level: "warn",
  msg: "Deno aborts request.signal after every response (legacy behaviour), so a request's signal cannot tell that the client left",
  fix: 'add "unstable": ["no-legacy-abort"] to deno.json, or run deno with --unstable-no-legacy-abort',
} as const;

let _decided = false;

/**
 * Looks at one delivered answer until the first is seen; warns once if its signal was aborted
 * by Deno. `info.completed` is read only until then: it is a getter, read on every request it
 * would cost every request.
 */
export function _watchLegacyAbort(request: Request, info: { readonly completed?: Promise<void> }, log: Logger): void {
  if (_decided) return;
  const completed = info.completed;
  if (completed === undefined) return;
  completed.then(() => {
    if (_decided) return;
    _decided = true;
    if (request.signal.aborted) log({ ...LEGACY_ABORT_WARNING });
  }, () => {}); // not delivered (the client left): the next answer decides
}
