// Node's head path (_HeadFetch): a request without a body meets the gates that read nothing of
// its Request before the adapter builds one, and a refusal among them is answered as prebuilt
// parts the adapter writes itself — the refusal pays for no translation. A gate that waits (the
// admission queue, a later turn) is waited for first: a refusal after the wait is answered as
// parts too (under a closed-loop storm most refusals come after a wait). The first gate that
// needs the request, or the handler, has the adapter build it (`translate`), once, and the
// guard goes on from there as it would have. If it cannot be built (the adapter answered with
// its own error), what the gates handed out is given back.
import type { DenyLayer } from "./events.ts";
import { _FORCED, type Gate, type GateRefusal, type GateVerdict } from "./gates/gate.ts";
import { type _HeadAnswer, _refusalHead } from "./gates/refuse.ts";
import type { _AnswerHead, _Translate } from "./guarded_fetch.ts";
import type { _Admission } from "./request/admission.ts";

/** The guard's own steps, for one serving fetch (its handler bound). */
export interface _HeadSteps {
  /** Runs the gates of `list` from `i` on, then the handler (`i` = the list's length: the handler). */
  pass(a: _Admission, list: readonly Gate[], i: number): Response | Promise<Response>;
  /** Reports a refusal (the guard's one place for it). */
  reportDeny(layer: DenyLayer, r: GateRefusal): void;
  /** A forced drain came since `a` started: still waiting at a gate, it goes no further. */
  forced(a: _Admission): boolean;
}

/**
 * Runs `list` from gate `from` for `a`, whose request is not built yet: a refusal's parts, or
 * undefined once handed over (translated, or waiting: a refusal after the wait goes to `answer`).
 */
export function _passHead(steps: _HeadSteps, a: _Admission, list: readonly Gate[], translate: _Translate, answer: _AnswerHead, from = 0): _HeadAnswer | undefined {
  for (let i = from; i < list.length; i++) {
    const gate = list[i]!;
    if (gate.fromHead !== true) {
      _handOff(a, translate, (request) => (a.translated(request), steps.pass(a, list, i)));
      return undefined;
    }
    const v = gate.admit(a);
    if (v === undefined) continue;
    if (typeof (v as PromiseLike<GateVerdict>).then === "function") {
      // Called back inside the turn that grants the wait (the load gate's later turn runs the
      // handler in its slice), so the rest of the path runs there, synchronously.
      void (v as PromiseLike<GateVerdict>).then((r) => {
        let refused: _HeadAnswer | undefined;
        try {
          refused = steps.forced(a) ? _refuseHead(steps, a, gate, _FORCED, translate) : r === undefined ? ((a.waited = true), _passHead(steps, a, list, translate, answer, i + 1)) : _refuseHead(steps, a, gate, r, translate);
        } catch (error) {
          // Outside the adapter's translation (which answers its own failures): a 500, logged there.
          a.release();
          answer(_refusalHead(500), a.info, error);
          return;
        }
        if (refused !== undefined) answer(refused, a.info);
      });
      return undefined;
    }
    return _refuseHead(steps, a, gate, v as GateRefusal, translate);
  }
  _handOff(a, translate, (request) => (a.translated(request), steps.pass(a, list, list.length)));
  return undefined;
}

/** Gate `gate` refused `a`: given back, reported, and answered as parts (or, with a Response of its own, translated). */
function _refuseHead(steps: _HeadSteps, a: _Admission, gate: Gate, r: GateRefusal, translate: _Translate): _HeadAnswer | undefined {
  a.release();
  steps.reportDeny(r.layer ?? gate.layer, r);
  if (r.response === undefined) return _refusalHead(r.status, r.retryAfterMs, r.close);
  // A gate's own answer (RateLimit fields) is a Response: it goes through the translation.
  translate(() => r.response!, a.info);
  return undefined;
}

/** The adapter builds the request and goes on with `k`; if it could not, what `a` holds is given back. */
function _handOff(a: _Admission, translate: _Translate, k: (request: Request) => Response | Promise<Response>): void {
  translate(k, a.info);
  if (a.request === undefined) a.release();
}
