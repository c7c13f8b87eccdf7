// The short name of a client key: SHA-256 of its UTF-8 bytes, the first 128 bits in base64url
// (22 characters). A client key of any length or content becomes a short opaque name, and
// nobody can pick a key that lands in another client's budget: the Redis store's key names,
// and the key tables' name for a long key (_key_table.ts). Synchronous on purpose: Web
// Crypto's digest is asynchronous and measured ~30 µs a call on Node and Deno (5 µs on Bun),
// more than the whole check; this costs ~1 µs for a short key.

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const W = new Uint32Array(64);
const H = new Uint32Array(8);
const INIT = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const encoder = new TextEncoder();
const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
// Reused for every key that fits (most: addresses, ids); a longer one gets its own buffer.
const scratch = new Uint8Array(256);

/** Hashes the first `length` bytes of `buf`, whose size leaves room for the padding, into H. */
function _digest(buf: Uint8Array, length: number): void {
  const total = ((length + 9 + 63) >> 6) << 6;
  buf.fill(0, length, total);
  buf[length] = 0x80;
  const bits = length * 8;
  const hi = Math.floor(bits / 0x100000000);
  buf[total - 8] = hi >>> 24;
  buf[total - 7] = hi >>> 16;
  buf[total - 6] = hi >>> 8;
  buf[total - 5] = hi;
  buf[total - 4] = bits >>> 24;
  buf[total - 3] = bits >>> 16;
  buf[total - 2] = bits >>> 8;
  buf[total - 1] = bits;
  H.set(INIT);
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) {
      const j = off + i * 4;
      W[i] = (buf[j]! << 24) | (buf[j + 1]! << 16) | (buf[j + 2]! << 8) | buf[j + 3]!;
    }
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15]!, b = W[i - 2]!;
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      W[i] = W[i - 16]! + s0 + W[i - 7]! + s1;
    }
    let a = H[0]!, b = H[1]!, c = H[2]!, d = H[3]!, e = H[4]!, f = H[5]!, g = H[6]!, h = H[7]!;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    H[0] = H[0]! + a;
    H[1] = H[1]! + b;
    H[2] = H[2]! + c;
    H[3] = H[3]! + d;
    H[4] = H[4]! + e;
    H[5] = H[5]! + f;
    H[6] = H[6]! + g;
    H[7] = H[7]! + h;
  }
}

/** Room for `length` bytes and their padding. */
const _room = (length: number) => ((length + 9 + 63) >> 6) << 6;

/** SHA-256 of `bytes` (the whole digest, 32 bytes). */
export function _sha256(bytes: Uint8Array): Uint8Array {
  const buf = new Uint8Array(_room(bytes.length));
  buf.set(bytes);
  _digest(buf, bytes.length);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const w = H[i]!;
    out[i * 4] = w >>> 24;
    out[i * 4 + 1] = w >>> 16;
    out[i * 4 + 2] = w >>> 8;
    out[i * 4 + 3] = w;
  }
  return out;
}

/** Six bits of the digest's first 128, from bit `at` (big-endian words in H). */
const _six = (at: number): number => {
  const word = at >>> 5, shift = at & 31;
  const hi = H[word]! << shift;
  const lo = shift > 26 && word < 3 ? H[word + 1]! >>> (32 - shift) : 0;
  return ((hi | lo) >>> 26) & 63;
};

/**
 * The first 128 bits of SHA-256(UTF-8 of `key`), base64url without padding (22 characters). A
 * key with a lone surrogate (not text UTF-8 can hold: it would be encoded as U+FFFD, one
 * budget for many keys) is hashed as a 0xFF byte, which no UTF-8 holds, then its UTF-16 units.
 */
export function _keyHash(key: string): string {
  if (!(key as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    const bytes = new Uint8Array(_room(1 + 2 * key.length));
    bytes[0] = 0xff;
    for (let i = 0; i < key.length; i++) {
      const unit = key.charCodeAt(i);
      bytes[1 + 2 * i] = unit >>> 8;
      bytes[2 + 2 * i] = unit & 255;
    }
    _digest(bytes, 1 + 2 * key.length);
  } else if (_room(key.length * 3) > scratch.length) {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    const buf = encoder.encode(key);
    const room = new Uint8Array(_room(buf.length));
    room.set(buf);
    _digest(room, buf.length);
  } else {
    const { written } = encoder.encodeInto(key, scratch);
    _digest(scratch, written);
  }
  let s = "";
  // 128 bits: 21 groups of 6, and the last 2 bits padded with zeros.
  for (let at = 0; at < 126; at += 6) s += B64[_six(at)]!;
  return s + B64[(H[3]! & 3) << 4]!;
}
