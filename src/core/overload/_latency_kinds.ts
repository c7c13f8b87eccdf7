// The adaptive limit's kinds of request (routes: adaptive_limit.ts `sample`'s `kind`), each with
// its own no-queue latency, so that a window is compared with the no-queue latency of its own
// mix: the sum of its samples' latencies over the sum of their kinds' baselines (a kind's first
// window counts as at its own latency; a sample of no kind, or of one the table had no room for,
// as at the window's baseline). Against one baseline, a slow route joining a fast one read as
// 60-220 times the baseline, queueing, whenever the CPU was busy: the limit learned on the fast
// route halved again and again, and both routes waited ~500 ms for seconds (a review, mixed
// load at 60-80 % of a core). Bounded: a storm over a new path each request read as no
// queueing, every sample a new kind's first, and the limit went from 2-4 to 128 (a review, all
// runtimes). Not re-exported.
import { _divisor, _follow, _rebase, type _Baseline } from "./_baseline.ts";

/**
 * One kind of request (a route): its own no-queue latency — the lowest mean of its samples in a
 * window, undefined before its first window closed — and its samples in the current window.
 */
export interface _Kind extends _Baseline {
  sum: number;
  n: number;
  /** Slow start's own samples (the requests that began in the window: adaptive_limit.ts `sample`). */
  ownSum: number;
  ownN: number;
  /** The window it was last sampled in (a kind unsampled for `KIND_IDLE_WINDOWS` makes room). */
  seen: number;
}

/** The most kinds with a baseline of their own; past it, new kinds are read against the window's baseline. */
const MAX_KINDS = 64;
/**
 * The most new kinds a window takes in; the rest of that window's new kinds are read against the
 * window's baseline. A new kind's first window counts as at its own latency: the fewer a window
 * takes in, the less a storm over new paths hides in them (at 8, 8 of a window's 10 samples).
 */
const NEW_KINDS_A_WINDOW = 2;
/** The longest a kind's path is kept (a longer one is read to here). */
const KIND_CHARS = 256;
/** Windows after which an unsampled kind may be forgotten to make room. */
const KIND_IDLE_WINDOWS = 100;

/** The kinds, and the current window's sums over the samples that have one. */
export class _LatencyKinds {
  readonly #kinds = new Map<string, _Kind>();
  /** Kinds taken in during the current window. */
  #newKinds = 0;
  /** The window in which the full table was last searched for idle kinds (once a window: a flood of new paths costs no search a request). */
  #searchedAt = -1;
  /** In the current window: the samples with a kind, and their kinds' baselines' sum. */
  n = 0;
  base = 0;
  /** The same over slow start's own samples. */
  ownN = 0;
  ownBase = 0;

  /**
   * Counts a sample of `path` in window `window`; returns its kind, or undefined where the table
   * has no room for it (the sample is then read against the window's baseline).
   */
  add(path: string, latencyMs: number, window: number): _Kind | undefined {
    const k = this.#kindOf(path, window);
    if (k === undefined) return undefined;
    k.sum += latencyMs;
    k.n++;
    k.seen = window;
    this.n++;
    this.base += _baseOf(k, latencyMs);
    return k;
  }

  /** Counts a sample `add` returned `k` for among slow start's own samples. */
  addOwn(k: _Kind, latencyMs: number): void {
    k.ownSum += latencyMs;
    k.ownN++;
    this.ownN++;
    this.ownBase += _baseOf(k, latencyMs);
  }

  /** The window is read: its sums start again. */
  read(): void {
    this.n = this.base = this.ownN = this.ownBase = 0;
  }

  /**
   * Each kind sampled in the window (read as the window was: `own`, slow start's own samples):
   * its baseline follows its mean by the rule the window's follows the window's by (_baseline.ts:
   * `_follow`, or `_rebase` where the window rebased), so that one kind alone reads exactly as
   * without kinds.
   */
  close(rebase: boolean, share: number, own: boolean): void {
    for (const k of this.#kinds.values()) {
      const n = own ? k.ownN : k.n;
      const sum = own ? k.ownSum : k.sum;
      k.sum = k.n = k.ownSum = k.ownN = 0;
      if (share === 1) k.anchor = undefined;
      if (n === 0) continue;
      if (rebase) _rebase(k, sum / n);
      else _follow(k, sum / n, share);
    }
    this.#newKinds = 0;
  }

  /** The window's samples are dropped (an idle spell: adaptive_limit.ts `STALE_WINDOWS`). */
  forget(): void {
    for (const k of this.#kinds.values()) k.sum = k.n = k.ownSum = k.ownN = 0;
    this.read();
  }

  #kindOf(path: string, window: number): _Kind | undefined {
    const key = path.length > KIND_CHARS ? path.slice(0, KIND_CHARS) : path;
    const kinds = this.#kinds;
    let k = kinds.get(key);
    if (k === undefined) {
      if (this.#newKinds >= NEW_KINDS_A_WINDOW) return undefined;
      if (kinds.size >= MAX_KINDS) {
        if (this.#searchedAt === window) return undefined;
        this.#searchedAt = window;
        for (const [name, old] of kinds) if (window - old.seen > KIND_IDLE_WINDOWS) kinds.delete(name);
        if (kinds.size >= MAX_KINDS) return undefined;
      }
      this.#newKinds++;
      k = { base: undefined, anchor: undefined, sum: 0, n: 0, ownSum: 0, ownN: 0, seen: window };
      kinds.set(key, k);
    }
    return k;
  }
}

// A sample's kind's baseline: its own latency in the kind's first window; a 0 one (a coarse clock) as _baseline.ts `_divisor` reads it.
const _baseOf = (k: _Kind, latencyMs: number): number => _divisor(k.base ?? latencyMs);
