// The admissions whose handler is running asynchronously (a forced drain answers each): a
// list threaded through the admissions themselves. A Set would cost every asynchronous
// request an add and a delete, and a Set that fills and empties with the traffic rehashes
// over and over (measured: Set.prototype.delete was 7.5 % of Deno's CPU under the hygiene()
// middleware at 64 connections); linking and unlinking are four writes each. Internal.

/** What the list threads through: two links on each member (the admission's own fields). */
export interface _Linked {
  prevRunning: _Linked | undefined;
  nextRunning: _Linked | undefined;
}

export class _Running<T extends _Linked> {
  #head: T | undefined = undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(item: T): void {
    item.prevRunning = undefined;
    item.nextRunning = this.#head;
    if (this.#head !== undefined) this.#head.prevRunning = item;
    this.#head = item;
    this.#size++;
  }

  /** Unlinks `item`; a no-op for one not in the list. */
  delete(item: T): void {
    const prev = item.prevRunning;
    const next = item.nextRunning;
    if (prev === undefined && this.#head !== item) return;
    if (prev === undefined) this.#head = next as T | undefined;
    else prev.nextRunning = next;
    if (next !== undefined) next.prevRunning = prev;
    item.prevRunning = item.nextRunning = undefined;
    this.#size--;
  }

  /** The members now (a copy: what is done to one may unlink it). */
  snapshot(): T[] {
    const out: T[] = [];
    for (let item = this.#head; item !== undefined; item = item.nextRunning as T | undefined) out.push(item);
    return out;
  }
}
