import { _given, _options, _show, type _KeyList } from "../_validate.ts";
import { type _Cidr, _format, _inCidr, type _Ip, _mask, _parseCidr, _parseNode } from "./_ip.ts";

/** Options of {@linkcode createClientKey} and {@linkcode clientKey}. */
export interface ClientKeyOptions {
  /**
   * CIDRs (or single addresses) of the proxies in front of the server, e.g. `["10.0.0.0/8"]`.
   * Only when the direct peer is inside one of them is the proxy header read; from anyone
   * else it is ignored, since anyone can write it. An IPv6 CIDR also covers the IPv4(-mapped)
   * peers inside it: `::/0` is every peer.
   * @default []
   */
  trustedProxies?: readonly string[] | undefined;
  /**
   * The proxy header the trusted proxies write. Only one is read: a proxy that manages one
   * passes the other through untouched, and a client could forge it.
   * @default "x-forwarded-for"
   */
  proxyHeader?: "x-forwarded-for" | "forwarded" | undefined;
  /**
   * IPv6 clients are keyed by their network of this many bits (`2001:db8:1:2::/64`): one
   * client rotating addresses inside its /64 shares one bucket. 1 to 128.
   * @default 64
   */
  ipv6Prefix?: number | undefined;
  /** The key when there is no usable peer address (serverless, a unix socket). @default "unknown" */
  unknownKey?: string | undefined;
}

/** What the transport knows of a request: its direct peer, when the runtime exposes it. */
export interface ClientKeyInfo {
  peer?: { readonly address: string } | undefined;
}

/** A prepared client-key function; see {@linkcode createClientKey}. */
export type ClientKeyFunction = (request: Pick<Request, "headers">, info?: ClientKeyInfo) => string;

/** The most characters of a non-address entry kept in its derived key. */
const DERIVED_MAX = 64;

/**
 * `text` as a string of its own. A slice of a header is a view of the whole header in V8: a key
 * table holding the derived key held the header too (a review: 4,096 keys from 15 KB headers
 * held 58 MB on Node).
 */
function _own(text: string): string {
  const codes = new Array<number>(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i);
  return String.fromCharCode.apply(null, codes);
}

function _invalidCidr(value: unknown): Error {
  const text = typeof value === "string" ? value : "";
  const addressOk = text.includes("/") && _parseCidr(text.slice(0, text.indexOf("/"))) !== undefined;
  const message = `Cannot create client key as "trustedProxies" must list CIDRs: current value is ${_show(value)}`;
  return addressOk ? new RangeError(message) : new TypeError(message);
}

/** The `for=` value of each element of `value` (a `Forwarded` header, or one element of it), left to right; null where absent or broken. */
function _forwardedFors(value: string): (string | null)[] {
  const fors: (string | null)[] = [];
  let current: string | null = null;
  const n = value.length;
  let i = 0;
  for (;;) {
    const nameStart = i;
    while (i < n && value[i] !== "=" && value[i] !== ";" && value[i] !== ",") i++;
    const name = value.slice(nameStart, i).trim().toLowerCase();
    let v: string | null = null;
    if (value[i] === "=") {
      i++;
      while (value[i] === " " || value[i] === "\t") i++;
      if (value[i] === '"') {
        let s = "";
        for (i++; i < n && value[i] !== '"'; i++) s += value[i] === "\\" ? (value[++i] ?? "") : value[i];
        v = i < n ? s : null; // unterminated: broken
        i++;
        while (i < n && value[i] !== ";" && value[i] !== ",") if (value[i++]!.trim() !== "") v = null;
      } else {
        const start = i;
        while (i < n && value[i] !== ";" && value[i] !== ",") i++;
        v = value.slice(start, i).trim();
      }
    }
    if (name === "for") current = current === null ? v : null; // two for= in one element: broken
    if (i >= n) {
      fors.push(current);
      return fors;
    }
    if (value[i] === ",") {
      fors.push(current);
      current = null;
    }
    i++;
  }
}

/**
 * The `for=` value of each element of a `Forwarded` header, right to left; null where absent
 * or broken. The elements are split from the right, so the ones the trusted proxies appended
 * are read as they wrote them: whatever a client wrote to their left (an unterminated quote
 * that would run on over them, left to right) can only break its own elements.
 */
function _forwardedForsFromRight(value: string): (string | null)[] {
  const fors: (string | null)[] = [];
  let quoted = false;
  let end = value.length;
  for (let i = value.length - 1; i >= -1; i--) {
    if (i >= 0) {
      const c = value[i];
      if (c === '"') {
        let slashes = 0;
        while (i - slashes - 1 >= 0 && value[i - slashes - 1] === "\\") slashes++;
        if (slashes % 2 === 0) quoted = !quoted; // a quote escaped inside a quoted string is text
        continue;
      }
      if (c !== "," || quoted) continue;
    }
    const element = _forwardedFors(value.slice(i + 1, end));
    fors.push(element.length === 1 ? element[0]! : null);
    end = i;
  }
  return fors;
}

/** Every option of {@linkcode ClientKeyOptions}: any other key is refused (_validate.ts `_onlyKnown`). */
export const _CLIENT_KEY_KEYS: _KeyList<ClientKeyOptions> = { trustedProxies: true, proxyHeader: true, ipv6Prefix: true, unknownKey: true };

/**
 * Prepares a client-key function: trusted-proxy CIDRs are parsed once, here.
 *
 * The key is the direct peer's address with the port dropped; IPv4-mapped IPv6 reads as
 * IPv4; IPv6 is keyed by its network (`ipv6Prefix`, canonical RFC 5952 text plus `/64`).
 * When the peer is a trusted proxy, the proxy header's chain is walked from the right,
 * skipping trusted hops, and the first untrusted address is the client (every hop trusted:
 * the leftmost). An entry there that is not an address is the client too — it is what the
 * last trusted hop wrote about its peer: empty (`1.2.3.4,`, an empty header), `unknown` or a
 * `Forwarded` element without a usable `for=` give `unknownKey`; anything else (an obfuscated
 * `_id`, garbage) is keyed `id:` + its first 64 characters, a stable bucket of its own.
 * Never the proxy's own address, which would make everyone behind it share one bucket. No
 * header: the proxy itself is the client. Nothing here ever throws per request. No peer, or
 * a peer that is not an IP address, gives `unknownKey` — every such request shares one
 * bucket. An IPv6 CIDR in `trustedProxies` also covers the IPv4 peers whose mapped form
 * (`::ffff:a.b.c.d`) it holds: `::/0` trusts every peer, IPv4 included.
 *
 * Invalid CIDRs throw when the function is created: a TypeError for a malformed address, a
 * RangeError for a prefix out of range.
 *
 * @example Keying clients behind a trusted proxy
 * ```ts
 * import { createClientKey } from "serve-hygiene";
 * const key = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
 * const request = new Request("http://x/", { headers: { "x-forwarded-for": "203.0.113.9, 10.0.0.7" } });
 * console.assert(key(request, { peer: { address: "10.0.0.2" } }) === "203.0.113.9");
 * console.assert(key(request, { peer: { address: "198.51.100.1" } }) === "198.51.100.1");
 * console.assert(key(new Request("http://x/"), { peer: { address: "2001:db8:1:2::99" } }) === "2001:db8:1:2::/64");
 * ```
 */
export function createClientKey(options?: ClientKeyOptions): ClientKeyFunction {
  const what = "create client key";
  const o = _options(what, options, _CLIENT_KEY_KEYS);
  const proxies = _given(o.trustedProxies, []);
  if (!Array.isArray(proxies)) {
    throw new TypeError(`Cannot ${what} as "trustedProxies" must be an array: current value is ${_show(proxies)}`);
  }
  const trusted: _Cidr[] = proxies.map((text: unknown) => {
    const cidr = typeof text === "string" ? _parseCidr(text.trim()) : undefined;
    if (cidr === undefined) throw _invalidCidr(text);
    return cidr;
  });
  const header = _given(o.proxyHeader, "x-forwarded-for");
  if (header !== "x-forwarded-for" && header !== "forwarded") {
    throw new TypeError(`Cannot ${what} as "proxyHeader" must be "x-forwarded-for" or "forwarded": current value is ${_show(header)}`);
  }
  const prefix = _given(o.ipv6Prefix, 64);
  if (!Number.isInteger(prefix) || prefix < 1 || prefix > 128) {
    throw new RangeError(`Cannot ${what} as "ipv6Prefix" must be an integer from 1 to 128: current value is ${_show(prefix)}`);
  }
  const unknownKey = _given(o.unknownKey, "unknown");
  if (typeof unknownKey !== "string") {
    throw new TypeError(`Cannot ${what} as "unknownKey" must be a string: current value is ${_show(unknownKey)}`);
  }

  const isTrusted = (ip: _Ip): boolean => {
    for (const cidr of trusted) if (_inCidr(ip, cidr)) return true;
    return false;
  };
  const keyOf = (ip: _Ip): string => (typeof ip === "number" ? _format(ip) : `${_format(_mask(ip, prefix))}/${prefix}`);

  // Where the trusted chain ends on an entry that is not an address, that entry is the
  // client as far as anyone can tell: empty or "unknown" is the unknown client (RFC 7239),
  // anything else (an obfuscated `_id`, garbage) keys its own bucket by its text. Never the
  // proxy's own address: that would put everyone behind the proxy in one bucket.
  const derived = (raw: string | null): string => {
    const text = raw === null ? "" : raw.trim();
    return text === "" || text.toLowerCase() === "unknown" ? unknownKey : _own(`id:${text.slice(0, DERIVED_MAX)}`);
  };

  // Right to left: the rightmost entry was written by the proxy we trust, the ones to its
  // left by whoever spoke to it. A string is a final, derived key.
  const fromXff = (value: string): _Ip | string | undefined => {
    let leftmost: _Ip | undefined;
    for (let end = value.length; end >= 0; ) {
      const comma = end > 0 ? value.lastIndexOf(",", end - 1) : -1;
      const text = value.slice(comma + 1, end);
      const ip = _parseNode(text);
      if (ip === undefined) return derived(text);
      if (!isTrusted(ip)) return ip;
      leftmost = ip;
      if (comma < 0) break;
      end = comma;
    }
    return leftmost;
  };
  const fromForwarded = (value: string): _Ip | string | undefined => {
    let leftmost: _Ip | undefined;
    for (const text of _forwardedForsFromRight(value)) {
      const ip = text === null ? undefined : _parseNode(text);
      if (ip === undefined) return derived(text);
      if (!isTrusted(ip)) return ip;
      leftmost = ip;
    }
    return leftmost;
  };

  // The last untrusted peer's key: a peer that is not a trusted proxy keys by its address
  // alone, so a client sending request after request is parsed and formatted once.
  let lastAddress: string | undefined;
  let lastKey = unknownKey;
  return function clientKey(request, info) {
    const address = info?.peer?.address;
    if (address === lastAddress && address !== undefined) return lastKey;
    const peer = typeof address === "string" ? _parseNode(address) : undefined;
    if (peer === undefined) return unknownKey;
    if (trusted.length > 0 && isTrusted(peer)) {
      try {
        const value = request.headers.get(header);
        if (value !== null) {
          const client = header === "forwarded" ? fromForwarded(value) : fromXff(value);
          if (typeof client === "string") return client;
          if (client !== undefined) return keyOf(client);
        }
      } catch {
        // A header that cannot be read or parsed is no reason to fail a request: use the peer.
      }
      return keyOf(peer);
    }
    lastKey = keyOf(peer);
    lastAddress = address;
    return lastKey;
  };
}

/**
 * The client key of one request. Convenient for one-offs; a server should prepare the
 * function once with {@linkcode createClientKey} (CIDRs are parsed per call here).
 *
 * @example
 * ```ts
 * import { clientKey } from "serve-hygiene";
 * console.assert(clientKey(new Request("http://x/"), { peer: { address: "::ffff:192.0.2.1" } }) === "192.0.2.1");
 * console.assert(clientKey(new Request("http://x/"), {}) === "unknown");
 * ```
 */
export function clientKey(request: Pick<Request, "headers">, info?: ClientKeyInfo, options?: ClientKeyOptions): string {
  return createClientKey(options)(request, info);
}
