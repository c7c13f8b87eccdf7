// Deno's server.shutdown() fails the body read of every request still uploading at that moment
// (BadResource, a bare Deno.serve's too: scripts/probes/deno_shutdown_upload.ts), which the
// handler then sees as its client leaving: a graceful drain would cut every upload in
// progress. So the adapter keeps the uploads in progress, and stops accepting once those
// begun before the stop have been read to their end (or answered), or the drain is forced.
// Meanwhile the listener stays open, and the draining gate answers what arrives 503 + close.
import type { _BodyWatch } from "./drop.ts";

/** Request bodies being read now, on one Deno server. */
export class _Uploads {
  readonly #open = new Set<_BodyWatch>();
  /** The uploads the stop waits for (those open when it came), and its wake-up. */
  #awaited: Set<_BodyWatch> | undefined = undefined;
  #wake: (() => void) | undefined = undefined;
  #ending: Promise<void> | undefined = undefined;

  /** `watch`'s body is open until it is read to its end, fails, or its request's answer completed. */
  add(watch: _BodyWatch, completed: Promise<void> | undefined): void {
    this.#open.add(watch);
    const end = () => {
      if (!this.#open.delete(watch)) return;
      const awaited = this.#awaited;
      if (awaited !== undefined && awaited.delete(watch) && awaited.size === 0) this.cut();
    };
    watch.onEnd = end;
    completed?.then(end, end);
  }

  /** Whether the stop waits for uploads now (the port accepts only for them). */
  get awaited(): boolean {
    return this.#awaited !== undefined;
  }

  /** Settles once every upload open now has ended, or at {@linkcode cut}. */
  ended(): Promise<void> {
    if (this.#ending !== undefined) return this.#ending; // asked again (serve()'s failure path): the same wait
    if (this.#open.size === 0) return Promise.resolve();
    this.#awaited = new Set(this.#open);
    return (this.#ending = new Promise((resolve) => (this.#wake = resolve)));
  }

  /** Stops waiting (the drain was forced, or the last awaited upload ended). */
  cut(): void {
    const wake = this.#wake;
    this.#awaited = undefined;
    this.#wake = undefined;
    wake?.();
  }
}
