// How a no-queue latency (a baseline) follows the windows' means of what it is the baseline of:
// the adaptive limit's window (adaptive_limit.ts `close`) and each kind of request
// (_latency_kinds.ts `close`) follow theirs by this one rule, so that one kind alone reads
// exactly as no kind (a property test). Not re-exported.

/** What a zero baseline stands for: the resolution of the coarsest clock a Host may give. */
const COARSE_CLOCK_MS = 1;

/** A no-queue latency: undefined before its first window closed. */
export interface _Baseline {
  base: number | undefined;
  /** Where `base` stood when work that gives no sample began to be held; undefined while none is. */
  anchor: number | undefined;
}

/**
 * A window whose mean was `mean` closed; `share` is the share of its permits taken in it (1: no
 * work held from before it). A faster window lowers the baseline to its mean — but while work
 * held from before the window gives no sample (an upstream that hangs, long polls), only by that
 * share, from where the baseline stood when that work began (`anchor`): the window's mean is of
 * the requests that could complete, not of the work in flight. Lowered all the way, an upstream
 * that hung for 8 s left a fast route's 0.1 ms as the baseline, and after it came back every
 * window read 200 times slower and the limit collapsed again and again (a review: a fast
 * route's p99 ~480 ms in 13-14 of 14 s); lowered by the share window after window, it still fell
 * most of the way over a long hang. Too high costs slack up to tolerance; too low collapses the
 * limit. The first window's mean is the baseline.
 */
export const _follow = (b: _Baseline, mean: number, share: number): void => {
  if (share === 1) b.anchor = undefined;
  if (b.base === undefined) b.base = mean;
  else if (mean < b.base) {
    if (share === 1) b.base = mean;
    else {
      b.anchor ??= b.base;
      const lowered = b.anchor + (mean - b.anchor) * share;
      if (lowered < b.base) b.base = lowered;
    }
  }
};

/** Halving the limit did not lower the latency: it is not queueing here, and the baseline is set to `mean` (held work met from now on is measured from there). */
export const _rebase = (b: _Baseline, mean: number): void => {
  b.base = mean;
  if (b.anchor !== undefined) b.anchor = mean;
};

/**
 * The baseline to divide by: a baseline of exactly 0 is a clock coarser than the work (one of
 * whole milliseconds, or one that stands still during synchronous work, as on Cloudflare
 * Workers): the latency is under its resolution, so the ratio is taken against one millisecond,
 * not 0 (0 / 0 left the limit NaN, and a NaN limit refuses nothing).
 */
export const _divisor = (base: number): number => (base > 0 ? base : COARSE_CLOCK_MS);
