// What the Node adapter tells the guard of a request (ServeInfo): its peer, the head's framing
// as node's parser read it, whether (and when) the client left, and — for a client waiting
// for `100 Continue` — how to tell it to send its body once the guard wants it.
import type { IncomingMessage, ServerResponse } from "node:http";
import { _ClientLeft, _socketPeer, type AbortSignalLike, type DeclaredLength } from "../../core/mod.ts";
import { peerOf } from "./peer.ts";

/** Set on a request whose client waits for `100 Continue` before it sends its body, until it is sent. */
const EXPECTS = Symbol("serve-hygiene expects continue");
type _Expecting = IncomingMessage & { [EXPECTS]?: boolean };

/** Tells a client waiting for `100 Continue` to send its body, once. */
export function _continue(req: _Expecting, res: ServerResponse): void {
  if (req[EXPECTS] !== true || res.headersSent || res.destroyed) return;
  req[EXPECTS] = false;
  res.writeContinue();
}

/** Whether the head declares a body (any method: a GET may carry one too). */
export function _declaresBody(req: IncomingMessage): boolean {
  return req.headers["content-length"] !== undefined || req.headers["transfer-encoding"] !== undefined;
}

/**
 * The declared body length as node's parser read it: it refuses a malformed length, but takes
 * one up to 2^64 − 1, which is malformed here past 2^53 − 1 (no exact number: a framing
 * review saw a 413 where the README and the other runtimes give the framing gate's 400).
 */
export function _declared(req: IncomingMessage): DeclaredLength {
  const length = req.headers["content-length"];
  if (length === undefined || req.headers["transfer-encoding"] !== undefined) return { kind: "unknown" };
  const bytes = Number(length);
  return Number.isSafeInteger(bytes) ? { kind: "length", bytes } : { kind: "malformed" };
}

// What the adapter tells the guard of a request: its peer, mapped only when read (one
// object a request, no closure), the head's framing, and whether (and when) the client left.
export class _NodeInfo {
  /** The pair @hono/node-server translates (the head path may ask for it after a wait). */
  readonly incoming: IncomingMessage;
  readonly outgoing: ServerResponse;
  readonly declaresBody: boolean;
  readonly declared: DeclaredLength | undefined;
  readonly continueBody: (() => void) | undefined;
  constructor(incoming: IncomingMessage, outgoing: ServerResponse, declaresBody: boolean) {
    this.incoming = incoming;
    this.outgoing = outgoing;
    this.declaresBody = declaresBody;
    this.declared = declaresBody ? _declared(incoming) : undefined;
    this.continueBody = declaresBody && (incoming as _Expecting)[EXPECTS] === true ? () => _continue(incoming, outgoing) : undefined;
  }
  get peer() {
    return peerOf(this.incoming);
  }
  get target() {
    return this.incoming.url;
  }
  get clientGone() {
    const socket = this.incoming.socket;
    // A TCP socket with no peer address is broken: its client reset it (node may not have
    // destroyed it yet when the request is read).
    return socket?.destroyed === true || (socket != null && _socketPeer(socket) === undefined);
  }
  // Read only for a request that waits (the admission queue).
  get clientLeft(): AbortSignalLike {
    return new _ClientLeft(this.incoming, this.outgoing);
  }
}

/**
 * A request with `Expect: 100-continue` (node's checkContinue): a body is held back until the
 * guard wants it; without one (or with a declared length of 0, however written) there is
 * nothing to hold back, and it is continued at once (keep-alive, as node itself would).
 */
export function _holdContinue(req: IncomingMessage, res: ServerResponse): void {
  const declared = _declaresBody(req) ? _declared(req) : undefined;
  if (declared !== undefined && !(declared.kind === "length" && declared.bytes === 0)) (req as _Expecting)[EXPECTS] = true;
  else res.writeContinue();
}
