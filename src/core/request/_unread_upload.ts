// Whether a request refused before its handler leaves an upload unread that its connection
// should close on (over 64 KiB, or of unknown length: closesOnUnreadBody). Only the body cap's
// 413 said so: Deno and Bun then read a gate's 429 or 503's whole upload at the client's pace
// — 8 MiB against a 1,000-byte cap, while the process shed — and served the connection on (a
// review; Node's adapter closes on every status itself).
import type { _Admission } from "./admission.ts";
import { _unreadCloses, closesOnUnreadBody } from "./body_caps.ts";
import { declaredLength } from "./body_limit.ts";

/** Whether `a`, refused by a gate, leaves an upload unread that its connection should close on. */
export function _leavesUploadUnread(a: _Admission): boolean {
  const info = a.info;
  // The adapter knows the head (Node: the length its parser read; Deno: no body at all).
  if (info?.declaresBody === false) return false;
  if (info?.declaresBody === true) return closesOnUnreadBody(a.declared ?? info.declared);
  const request = a.request;
  // A GET or HEAD is not asked for its headers (Deno and Bun do not check their bodies: README).
  const method = request.method;
  if (method === "GET" || method === "HEAD") return false;
  // Refused before the framing gate read them (draining, memory, load), or after it.
  if ((a.body ?? request.body) === null) return false;
  return _unreadCloses(request, a.declared ?? declaredLength(request.headers), true);
}
