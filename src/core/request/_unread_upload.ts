// Whether a request refused before its handler leaves an upload unread that its connection
// should close on (over 64 KiB, or of unknown length: closesOnUnreadBody). Only the body cap's
// 413 said so: Deno and Bun then read a gate's 429 or 503's whole upload at the client's pace
// — 8 MiB against a 1,000-byte cap, while the process shed — and served the connection on (a
// review; Node's adapter closes on every status itself).
import type { _Admission } from "./admission.ts";
import { _unreadCloses, closesOnUnreadBody } from "./body_caps.ts";
import { type DeclaredLength, declaredLength } from "./body_limit.ts";

/** Whether `a`, refused by a gate, leaves an upload unread that its connection should close on. */
export function _leavesUploadUnread(a: _Admission): boolean {
  const info = a.info;
  // The adapter knows the head (Node: the length its parser read; Deno: no body at all).
  if (info?.declaresBody === false) return false;
  if (info?.declaresBody === true) return closesOnUnreadBody(a.declared ?? info.declared);
  // Refused before the framing gate read the length (draining, memory, load), or after it.
  return _uploadUnread(a.request, a.declared);
}

/**
 * Whether `request`'s upload is unread and over 64 KiB or of unknown length (`declared`: its
 * length, when already read). A GET or HEAD is not asked for its headers (Deno and Bun do not
 * check their bodies: README). Also a route-level refusal's check (hono/route.ts).
 */
export function _uploadUnread(request: Request, declared?: DeclaredLength): boolean {
  const method = request.method;
  if (method === "GET" || method === "HEAD" || request.body === null || request.bodyUsed) return false;
  return _unreadCloses(request, declared ?? declaredLength(request.headers), true);
}
