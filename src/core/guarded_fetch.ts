// The guard's serving fetch, as adapters and hygiene() call it: the Response itself when the
// answer is known synchronously, a promise otherwise. createGuard installs it under _FETCH.
import type { Guard, GuardedHandler, ServeInfo } from "./guard_types.ts";
import type { GuardedInfo } from "./request/request_context.ts";
import type { _HeadAnswer } from "./gates/refuse.ts";

/** A fetch that answers synchronously when it can (adapters and hygiene() serve with it). */
export type _Fetch = (request: Request, info?: ServeInfo) => Response | Promise<Response>;
/** A guarded handler that may also take the adapter's info (hygiene() reads its Hono context there). */
export type _InfoHandler = (request: Request, view: GuardedInfo, info: ServeInfo | undefined) => Response | Promise<Response>;
/**
 * How a handler that answers elsewhere than in its return value hands its answer over
 * (hygiene(): Hono's chain answers in its context). `read` takes the handler's answer once its
 * promise fulfilled; `deliver` puts the guard's answer back, synchronously, before the guard's
 * promise settles — which then resolves to nothing. Saves the two promises a request that
 * mapping the chain's promise to its response and back would cost.
 */
export interface _Delivery {
  read(info: ServeInfo | undefined): unknown;
  /** `early`: the handler still runs and may settle later (a 408, a forced drain's 503). */
  deliver(res: Response, info: ServeInfo | undefined, early: boolean): void;
}
/** A fetch whose asynchronous answers were delivered (see {@linkcode _Delivery}). */
export type _DeliveringFetch = (request: Request, info?: ServeInfo) => Response | Promise<void>;
/**
 * Builds the request of `info` and answers it with `k(request)` (the adapter's translation,
 * Node). Called at most once a request: inside the {@linkcode _HeadFetch} call, or later, when
 * a gate's wait passes; if the request cannot be built, `k` is not called and the adapter
 * answers with its own error.
 */
export type _Translate = (k: (request: Request) => Response | Promise<Response>, info: ServeInfo | undefined) => void;
/**
 * Writes a refusal's parts for the request of `info`, after a wait (a refusal before any wait is
 * the {@linkcode _HeadFetch}'s result). `error`: the path failed (the answer is a 500); the
 * adapter logs it as it logs its translation's failures.
 */
export type _AnswerHead = (head: _HeadAnswer, info: ServeInfo | undefined, error?: unknown) => void;
/**
 * Serves a request from its head, before its Request is built (Node, a head that declares no
 * body): the gates that need nothing of the request run first, a wait among them included. A
 * refusal before any wait comes back as parts to write as they are; one after a wait goes to
 * `answer`; anything else — a gate that needs the request, the handler — goes through
 * `translate`, and the result is undefined.
 */
export type _HeadFetch = (info: ServeInfo, translate: _Translate, answer: _AnswerHead) => _HeadAnswer | undefined;
/** Where a serving fetch keeps its head path (an adapter that can use it reads it there). */
export const _HEAD: unique symbol = Symbol("serve-hygiene.head") as never;
/** A serving fetch, with its head path when it has one. */
export type _ServingFetch = _Fetch & { [_HEAD]?: _HeadFetch };

/** Where a guard keeps its serving fetch (internal). */
export const _FETCH: unique symbol = Symbol("serve-hygiene.fetch") as never;

/**
 * The guard's serving fetch for `handler` (internal: not exported from the package). Unlike
 * `wrap`, it returns the Response itself when the answer is known synchronously — a refusal
 * of the synchronous gates, a handler that returned a Response — so the runtime takes its
 * fast path instead of waiting on a promise. With `withInfo` the handler gets the info the
 * fetch was called with as a third argument.
 *
 * @example
 * ```ts
 * import { _guardedFetch, createGuard } from "./guard.ts";
 * const guard = createGuard({ loadMonitor: false });
 * const res = _guardedFetch(guard, () => new Response("hello"))(new Request("http://localhost/"));
 * console.assert(res instanceof Response && res.status === 200);
 * guard.dispose();
 * ```
 */
export function _guardedFetch(guard: Guard, handler: _InfoHandler, withInfo?: boolean): _Fetch;
export function _guardedFetch(guard: Guard, handler: _InfoHandler, withInfo: true, delivery: _Delivery): _DeliveringFetch;
export function _guardedFetch(guard: Guard, handler: _InfoHandler, withInfo = false, delivery?: _Delivery): _Fetch | _DeliveringFetch {
  const serving = (guard as { [_FETCH]?: (handler: _InfoHandler, withInfo: boolean, delivery?: _Delivery) => _Fetch })[_FETCH];
  if (serving !== undefined) return serving(handler, withInfo, delivery);
  // A guard built elsewhere (another copy of the package): its public wrap. A delivery is
  // asked for only with a guard of this copy (hygiene() builds its own).
  if (delivery !== undefined) throw new TypeError("A delivering fetch needs a guard built by this copy of serve-hygiene");
  return guard.wrap(withInfo ? (request, view) => handler(request, view, undefined) : (handler as GuardedHandler));
}
