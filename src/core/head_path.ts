// Node's head path (_HeadFetch): a request without a body meets the gates that read nothing of
// its Request before the adapter builds one, and a refusal among them is answered as prebuilt
// parts the adapter writes itself — the refusal pays for no translation. The first gate that
// needs the request, a wait, or the handler has the adapter build it (`translate`), once, and
// the guard goes on from there as it would have. If it cannot be built (the adapter answered
// with its own error), what the gates handed out is given back.
import type { DenyLayer } from "./events.ts";
import type { Gate, GateRefusal, GateVerdict } from "./gates/gate.ts";
import { type _HeadAnswer, _refusalHead } from "./gates/refuse.ts";
import type { _Translate } from "./guarded_fetch.ts";
import type { _Admission } from "./request/admission.ts";

/** The guard's own steps, for one serving fetch (its handler bound). */
export interface _HeadSteps {
  /** Runs the gates of `list` from `i` on, then the handler (`i` = the list's length: the handler). */
  pass(a: _Admission, list: readonly Gate[], i: number): Response | Promise<Response>;
  /** Goes on from gate `i + 1` once gate `i`'s wait passes (or answers its refusal). */
  waited(a: _Admission, list: readonly Gate[], i: number, v: Promise<GateVerdict>): Promise<Response>;
  /** Reports a refusal (the guard's one place for it). */
  reportDeny(layer: DenyLayer, r: GateRefusal): void;
}

/** Runs `list` for `a`, whose request is not built yet: a refusal's parts, or undefined once handed over. */
export function _passHead(steps: _HeadSteps, a: _Admission, list: readonly Gate[], translate: _Translate): _HeadAnswer | undefined {
  for (let i = 0; i < list.length; i++) {
    const gate = list[i]!;
    if (gate.fromHead !== true) {
      _handOff(a, translate, (request) => (a.translated(request), steps.pass(a, list, i)));
      return undefined;
    }
    const v = gate.admit(a);
    if (v === undefined) continue;
    if (typeof (v as PromiseLike<GateVerdict>).then === "function") {
      if (!_handOff(a, translate, (request) => (a.translated(request), steps.waited(a, list, i, v as Promise<GateVerdict>)))) {
        // Whatever the wait grants is given back: the request it was for cannot go on.
        (v as Promise<GateVerdict>).then((r) => r === undefined && a.release());
      }
      return undefined;
    }
    a.release();
    const r = v as GateRefusal;
    steps.reportDeny(gate.layer, r);
    if (r.response === undefined) return _refusalHead(r.status, r.retryAfterMs, r.close);
    // A gate's own answer (RateLimit fields) is a Response: it goes through the translation.
    translate(() => r.response!);
    return undefined;
  }
  _handOff(a, translate, (request) => (a.translated(request), steps.pass(a, list, list.length)));
  return undefined;
}

/** Whether the adapter built the request; if it could not, what `a` holds is given back. */
function _handOff(a: _Admission, translate: _Translate, k: (request: Request) => Response | Promise<Response>): boolean {
  translate(k);
  if (a.request !== undefined) return true;
  a.release();
  return false;
}
