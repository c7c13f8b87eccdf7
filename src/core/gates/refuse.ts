// The answers of refusals, with their headers built once: a refusal under a closed-loop storm
// costs what it allocates, and the only allocation left is the Response that is sent.
import { _TEXTS as TEXTS, retryAfterSeconds } from "../request/responses.ts";

// A plain record: @hono/node-server writes one straight to the socket, with no Headers built.
type _Init = Readonly<Record<string, string>>;
// Retry-After seconds are few in practice; past this many distinct shapes, build uncached.
const CACHE_MAX = 64;
// Keyed by a number (seconds × 2, + 1 with close), so finding one allocates nothing.
const cache = new Map<number, _Init>();

function _headersFor(retryAfterMs: number | undefined, close: boolean | undefined): _Init {
  const seconds = retryAfterMs === undefined ? 0 : retryAfterSeconds(retryAfterMs);
  const id = close ? seconds * 2 + 1 : seconds * 2;
  let init = cache.get(id);
  if (init !== undefined) return init;
  const record: Record<string, string> = { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" };
  if (retryAfterMs !== undefined) record["retry-after"] = String(seconds);
  if (close) record["connection"] = "close";
  init = Object.freeze(record);
  if (cache.size < CACHE_MAX) cache.set(id, init);
  return init;
}

/**
 * A refusal's answer, as `denyResponse` builds it (generic body, `Cache-Control: no-store`,
 * `Retry-After` where given, `Connection: close` on request) from prebuilt header lists.
 */
export function _refusalResponse(status: number, retryAfterMs?: number, close?: boolean): Response {
  return new Response(TEXTS[status] ?? "Error", { status, headers: _headersFor(retryAfterMs, close) });
}

// Prebuilt answers to clone, keyed by status and header list (see _clonedRefusal).
const prebuilt = new Map<number, Response>();

/** The key of an answer's shape (status, Retry-After seconds, close): a number, so finding one allocates nothing. */
function _shapeId(status: number, retryAfterMs: number | undefined, close: boolean | undefined): number {
  const seconds = retryAfterMs === undefined ? 0 : retryAfterSeconds(retryAfterMs);
  return (close ? seconds * 2 + 1 : seconds * 2) * 1000 + status;
}

/**
 * The same answer as {@linkcode _refusalResponse}, as a clone of one built once. Where the
 * runtime's Response is native (Bun, Deno: the Host says `cloneResponses`), a clone copies the
 * header list instead of validating and building it again; on Node @hono/node-server's
 * lightweight Response would build the full one to clone it, so Node builds each answer.
 */
export function _clonedRefusal(status: number, retryAfterMs?: number, close?: boolean): Response {
  const id = _shapeId(status, retryAfterMs, close);
  let res = prebuilt.get(id);
  if (res === undefined) {
    res = _refusalResponse(status, retryAfterMs, close);
    if (prebuilt.size >= CACHE_MAX) return res;
    prebuilt.set(id, res);
  }
  return res.clone();
}

/** A refusal's answer as parts an adapter writes itself (Node's head path: no Response built). */
export interface _HeadAnswer {
  readonly status: number;
  /** The same headers as {@linkcode _refusalResponse}'s, and the body's `content-length`. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

// Prebuilt head answers, keyed as `prebuilt` is.
const heads = new Map<number, _HeadAnswer>();

/**
 * The same answer as {@linkcode _refusalResponse}, as parts built once per shape. The body is
 * one of the generic ASCII texts, so its length in characters is its length in bytes.
 */
export function _refusalHead(status: number, retryAfterMs?: number, close?: boolean): _HeadAnswer {
  const id = _shapeId(status, retryAfterMs, close);
  let head = heads.get(id);
  if (head === undefined) {
    const body = TEXTS[status] ?? "Error";
    head = Object.freeze({ status, headers: Object.freeze({ ..._headersFor(retryAfterMs, close), "content-length": String(body.length) }), body });
    if (heads.size < CACHE_MAX) heads.set(id, head);
  }
  return head;
}
