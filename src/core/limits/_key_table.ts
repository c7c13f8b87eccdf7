// The one bounded key table of the keyed limiters (fixed window, token bucket, per-key
// in-flight counts). Not re-exported.
//
// Each entry has an expiry (`expiresAt`: a window's end, a bucket's TAT; -Infinity for an
// in-flight count back at 0, Infinity while work is in flight) that only moves later while
// the entry lives; an owner that moves one earlier says so (`lowered`). An entry past its
// expiry may be dropped; one that is not is never evicted (that would reset an abuser's
// count). Making room at the cap costs amortised O(1), never a scan of the table:
// - candidates: keys an owner announced as likely expired (an in-flight count back at 0) are
//   popped first; each announcement is popped once;
// - a sweep cursor: a live Map iterator walks the table in insertion order (oldest first, so
//   a churning flood finds its expired entry at the cursor) and resumes where it stopped,
//   at most SWEEP_STEP entries per call; a new pass starts when it reaches the end;
// - a lower bound on every entry's expiry (the least seen over the last full pass, lowered
//   by every insert): before it, nothing can have expired, so nothing is examined.
// A live iterator is kept on purpose: a fresh `map.keys()` from the start would step over
// every deleted slot at the head of V8's table again and again.
import { createSizeGauge, type SizeGauge, type SizeGaugeWriter } from "../size_gauge.ts";
import { _keyHash } from "./_key_hash.ts";

/** Entries examined at most per call to `makeRoom` by the sweep cursor. */
export const _SWEEP_STEP = 16;

/**
 * Keys longer than this many characters are held as their digest ({@linkcode _heldKey}): a
 * table's keys take at most ~8 MB (4,096 of 2 KB), and a token (a JWT as a custom key) is
 * held as it is, not hashed on every request (~10 µs per 1,000 characters).
 */
export const _LONG_KEY = 1024;

// Before the digest, a character no header value holds: a client sending a key that reads as a
// digest does not land in that long key's budget.
const DIGEST_PREFIX = "\u0000sha256:";
// The last long key and its digest: a take asks the table for one key two or three times.
let lastLong: string | undefined;
let lastHeld = "";

/**
 * The name a key is held under: the key, or past {@linkcode _LONG_KEY} characters its digest
 * (128 bits of SHA-256). A key table held any key as it was given: a client choosing its key
 * (a header) held ~60 KB a key, 244 MB in one table on Deno, and V8 hashes a string of 16,384
 * characters or more by its length alone, so each lookup among same-length keys compared them
 * all (a review: 4 ms a request on Node, seconds to fill a table). Idempotent.
 */
export function _heldKey(key: string): string {
  if (key.length <= _LONG_KEY) return key;
  if (key !== lastLong) {
    lastHeld = DIGEST_PREFIX + _keyHash(key);
    lastLong = key;
  }
  return lastHeld;
}

export class _KeyTable<E> {
  readonly capacity: number;
  readonly #map = new Map<string, E>();
  readonly #expiresAt: (entry: E) => number;
  readonly #size: SizeGaugeWriter;
  #cursor: Iterator<[string, E]> | undefined;
  /** No entry expires before this. */
  #bound = Infinity;
  /** The least expiry seen in the current pass (and inserted during it). */
  #passLeast = Infinity;
  #candidates: string[] = [];

  constructor(capacity: number, expiresAt: (entry: E) => number) {
    this.capacity = capacity;
    this.#expiresAt = expiresAt;
    this.#size = createSizeGauge(capacity);
  }

  /** Entries held now, and the capacity. */
  get gauge(): SizeGauge {
    return this.#size.gauge;
  }

  get length(): number {
    return this.#map.size;
  }

  /** The earliest time any entry may expire (a lower bound); Infinity when none can. */
  get bound(): number {
    return this.#bound;
  }

  get(key: string): E | undefined {
    return this.#map.get(_heldKey(key));
  }

  /** Inserts or replaces; the caller made room first (`makeRoom`). */
  set(key: string, entry: E): void {
    this.#map.set(_heldKey(key), entry);
    this.#size.set(this.#map.size);
    this.lowered(this.#expiresAt(entry));
  }

  delete(key: string): void {
    if (this.#map.delete(_heldKey(key))) this.#size.set(this.#map.size);
  }

  /** An entry's expiry moved earlier, to `at`. */
  lowered(at: number): void {
    if (at < this.#bound) this.#bound = at;
    if (at < this.#passLeast) this.#passLeast = at;
  }

  /** Announces that `key` may have expired; `makeRoom` checks it before sweeping. */
  candidate(key: string): void {
    key = _heldKey(key);
    const candidates = this.#candidates;
    // A hot key back at 0 request after request is announced once, not once a request.
    if (candidates.length > 0 && candidates[candidates.length - 1] === key) return;
    candidates.push(key);
    // Repeated announcements (a hot key back at 0 again and again) pile up: keep each held key
    // once. At most `capacity` remain, so this runs after `capacity` more announcements at
    // the earliest: amortised O(1) each.
    if (this.#candidates.length > 2 * this.capacity + 16) {
      this.#candidates = [...new Set(this.#candidates)].filter((k) => this.#map.has(k));
    }
  }

  /** True when there is room for one more entry, after dropping expired ones if full. */
  makeRoom(now: number): boolean {
    if (this.#map.size < this.capacity) return true;
    while (this.#candidates.length > 0) {
      const key = this.#candidates.pop()!;
      if (this.#expired(key, now)) {
        this.delete(key);
        return true;
      }
    }
    if (now < this.#bound) return false;
    for (let step = 0; step < _SWEEP_STEP; step++) {
      let next = this.#cursor?.next();
      if (next === undefined || next.done) {
        // A pass ended (or none began): what it saw bounds every entry from now on.
        if (next !== undefined) this.#bound = this.#passLeast;
        this.#passLeast = Infinity;
        this.#cursor = this.#map.entries();
        if (now < this.#bound) return false;
        next = this.#cursor.next();
        if (next.done) return this.#map.size < this.capacity;
      }
      const [key, entry] = next.value;
      const at = this.#expiresAt(entry);
      if (!(now < at)) {
        this.delete(key);
        return true;
      }
      if (at < this.#passLeast) this.#passLeast = at;
    }
    return false;
  }

  #expired(key: string, now: number): boolean {
    const entry = this.#map.get(key);
    return entry !== undefined && !(now < this.#expiresAt(entry));
  }
}
