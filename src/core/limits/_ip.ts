// Exact, allocation-light IP parsing for client keys and trusted-proxy CIDRs. Not
// re-exported. An address is a number (IPv4, unsigned 32-bit) or an array of eight 16-bit
// groups (IPv6); IPv4-mapped IPv6 (::ffff:a.b.c.d) is read as IPv4. Parsers return
// undefined on anything malformed and never throw.

export type _Ip = number | number[];

/** A parsed CIDR: the masked network and its prefix length. */
export interface _Cidr {
  readonly net: _Ip;
  readonly prefix: number;
}

/** Dotted-quad IPv4 in `s[from, to)`: four decimal octets, no leading zeros. -1 if malformed. */
export function _parseV4(s: string, from = 0, to = s.length): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // "01": leading zero (octal in some parsers)
      octet = octet * 10 + (c - 48);
      if (octet > 255) return -1;
      digits++;
    } else if (c === 46 && digits > 0 && dots < 3) {
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else return -1;
  }
  return digits > 0 && dots === 3 ? value * 256 + octet : -1;
}

function _hex(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** IPv6 text (with `::`, embedded IPv4, a `%zone` suffix stripped): eight groups, or undefined. */
export function _parseV6(text: string): number[] | undefined {
  const zone = text.indexOf("%");
  const n = zone === -1 ? text.length : zone;
  if (n < 2 || n > 45) return undefined;
  const groups = [0, 0, 0, 0, 0, 0, 0, 0];
  let count = 0;
  let gap = -1;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return undefined;
    gap = 0;
    i = 2;
  }
  while (i < n) {
    let j = i;
    let group = 0;
    let dotted = false;
    for (; j < n; j++) {
      const c = text.charCodeAt(j);
      if (c === 58) break;
      if (c === 46) dotted = true;
      else {
        const h = _hex(c);
        if (h < 0) return undefined;
        group = group * 16 + h;
      }
    }
    if (dotted) {
      const v4 = j === n && count <= 6 ? _parseV4(text, i, j) : -1;
      if (v4 < 0) return undefined;
      groups[count++] = v4 >>> 16;
      groups[count++] = v4 & 0xffff;
      break;
    }
    if (j === i || j - i > 4 || count === 8) return undefined;
    groups[count++] = group;
    if (j === n) break;
    if (text.charCodeAt(j + 1) === 58) {
      if (gap >= 0) return undefined;
      gap = count;
      i = j + 2;
    } else {
      i = j + 1;
      if (i === n) return undefined; // a trailing single colon
    }
  }
  if (gap < 0) return count === 8 ? groups : undefined;
  if (count > 7) return undefined;
  // Slide the groups after the gap to the end; the zeros of `::` are left in between.
  const shift = 8 - count;
  for (let k = count - 1; k >= gap; k--) {
    groups[k + shift] = groups[k]!;
    groups[k] = 0;
  }
  return groups;
}

function _unmap(g: number[]): _Ip {
  return g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff
    ? g[6]! * 65536 + g[7]!
    : g;
}

/** A bare address (IPv4 or IPv6, no port). */
export function _parseIp(s: string): _Ip | undefined {
  const v4 = _parseV4(s);
  if (v4 >= 0) return v4;
  const v6 = _parseV6(s);
  return v6 === undefined ? undefined : _unmap(v6);
}

function _isPort(s: string, from: number): boolean {
  if (from >= s.length || s.length - from > 5) return false;
  let port = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
    port = port * 10 + (c - 48);
  }
  return port <= 65535;
}

/** A node's port as RFC 7239 writes it: a number, or an obfuscated one (`_` + ALPHA / DIGIT / "." / "_" / "-"). */
function _isNodePort(s: string, from: number): boolean {
  if (s.charCodeAt(from) !== 95) return _isPort(s, from);
  if (from + 1 >= s.length) return false;
  for (let i = from + 1; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 46 || c === 95 || c === 45;
    if (!ok) return false;
  }
  return true;
}

/**
 * A network node as proxies and transports write it: `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`,
 * `[2001:db8::1]`, `[2001:db8::1]:80`, with surrounding whitespace; the port may be an
 * obfuscated one (`1.2.3.4:_conn7`, RFC 7239 §6.3): the address is what counts. Anything else
 * ("unknown", "_hidden", garbage) is undefined.
 */
export function _parseNode(raw: string): _Ip | undefined {
  const s = raw.trim();
  if (s.charCodeAt(0) === 91) {
    const close = s.indexOf("]");
    if (close === -1 || (close + 1 < s.length && !(s.charCodeAt(close + 1) === 58 && _isNodePort(s, close + 2)))) {
      return undefined;
    }
    const v6 = _parseV6(s.slice(1, close));
    return v6 === undefined ? undefined : _unmap(v6);
  }
  const colon = s.indexOf(":");
  if (colon !== -1 && colon === s.lastIndexOf(":")) {
    const v4 = _isNodePort(s, colon + 1) ? _parseV4(s, 0, colon) : -1;
    return v4 >= 0 ? v4 : undefined;
  }
  return _parseIp(s);
}

/** `ip` masked to its first `prefix` bits (IPv4 prefixes count from 32, IPv6 from 128). */
export function _mask(ip: _Ip, prefix: number): _Ip {
  if (typeof ip === "number") return prefix === 0 ? 0 : (ip & (0xffffffff << (32 - prefix))) >>> 0;
  const out = [0, 0, 0, 0, 0, 0, 0, 0];
  for (let i = 0; i < 8; i++) {
    const bits = prefix - 16 * i;
    out[i] = bits >= 16 ? ip[i]! : bits <= 0 ? 0 : ip[i]! & (0xffff << (16 - bits)) & 0xffff;
  }
  return out;
}

/**
 * Whether `ip` lies inside `cidr`. An IPv4 address is also inside an IPv6 CIDR that holds its
 * IPv4-mapped form (`::ffff:a.b.c.d`): `::/0` holds every IPv4 address. Peers are unmapped
 * before they get here, so a dual-stack socket's mapped peer and a plain IPv4 peer are one.
 */
export function _inCidr(ip: _Ip, cidr: _Cidr): boolean {
  const { net, prefix } = cidr;
  if (typeof ip === "number") {
    if (typeof net === "number") return _mask(ip, prefix) === net;
    return _inCidr([0, 0, 0, 0, 0, 0xffff, ip >>> 16, ip & 0xffff], cidr);
  }
  if (typeof net === "number") return false;
  for (let i = 0; i < 8; i++) {
    const bits = prefix - 16 * i;
    if (bits <= 0) return true;
    const m = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if ((ip[i]! & m) !== net[i]) return false;
  }
  return true;
}

/**
 * `addr` or `addr/prefix`; host bits are masked off. An IPv4-mapped IPv6 network with a
 * prefix of 96 or more is read as its IPv4 network. Undefined if malformed, the prefix out
 * of range included.
 */
export function _parseCidr(text: string): _Cidr | undefined {
  const slash = text.indexOf("/");
  const addr = slash === -1 ? text : text.slice(0, slash);
  const v4 = _parseV4(addr);
  const ip: _Ip | undefined = v4 >= 0 ? v4 : addr.includes("%") ? undefined : _parseV6(addr);
  if (ip === undefined) return undefined;
  const max = typeof ip === "number" ? 32 : 128;
  let prefix = max;
  if (slash !== -1) {
    const p = text.slice(slash + 1);
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p) || Number(p) > max) return undefined;
    prefix = Number(p);
  }
  const unmapped = typeof ip === "number" ? ip : _unmap(ip);
  if (typeof unmapped === "number" && typeof ip !== "number" && prefix >= 96) {
    return { net: _mask(unmapped, prefix - 96), prefix: prefix - 96 };
  }
  return { net: _mask(ip, prefix), prefix };
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run as `::`). */
export function _format(ip: _Ip): string {
  if (typeof ip === "number") return `${ip >>> 24}.${(ip >>> 16) & 255}.${(ip >>> 8) & 255}.${ip & 255}`;
  let best = -1;
  let bestLen = 1; // a single zero group is never compressed
  for (let i = 0; i < 8; ) {
    if (ip[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && ip[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      text += "::";
      i += bestLen - 1;
    } else {
      if (text !== "" && !text.endsWith(":")) text += ":";
      text += ip[i]!.toString(16);
    }
  }
  return text;
}

/** The widest prefix an IPv6 client key is aggregated to under table pressure. */
export const _V6_NETWORK = 48;
/** The prefix an IPv4 client key is aggregated to under table pressure. */
export const _V4_NETWORK = 24;

/**
 * The network a client key belongs to, for a table under pressure: an IPv6 key (`addr/len`
 * as client keys write it, or a bare address) widened to /48, an IPv4 key to /24.
 * Undefined for a key that is not an address (a tenant, "unknown", a derived `id:` key).
 */
export function _networkKey(key: string): string | undefined {
  const slash = key.indexOf("/");
  if (slash === -1) {
    // An IPv4-mapped address (a custom key of a dual-stack server's peer) is the IPv4 one: read
    // as IPv6, every IPv4 client shared one ::/48 budget under pressure (a review).
    const ip = key.includes("%") ? undefined : _parseIp(key);
    if (typeof ip === "number") return `${_format(_mask(ip, _V4_NETWORK))}/${_V4_NETWORK}`;
  }
  const v6 = _parseV6(slash === -1 ? key : key.slice(0, slash));
  if (v6 === undefined || key.includes("%")) return undefined;
  let prefix = 128;
  if (slash !== -1) {
    const text = key.slice(slash + 1);
    if (!/^\d{1,3}$/.test(text) || Number(text) > 128) return undefined;
    prefix = Number(text);
  }
  const wide = Math.min(prefix, _V6_NETWORK);
  return `${_format(_mask(v6, wide))}/${wide}`;
}
