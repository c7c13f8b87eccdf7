// A list threaded through its members (two link fields on each), oldest first: what the guard
// keeps per request or per connection changes with the traffic, and a Set that fills and
// empties with it rehashes over and over (measured: Set.prototype.delete was 7.5 % of Deno's
// CPU under the hygiene() middleware at 64 connections). Linking and unlinking are a few
// writes. A member is in at most one such list at a time. Internal.

/** What a list threads through: the member's own two link fields. */
export interface _Linked {
  prevLink: _Linked | undefined;
  nextLink: _Linked | undefined;
}

export class _LinkedList<T extends _Linked> {
  #head: T | undefined = undefined;
  #tail: T | undefined = undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The member added first and still in. */
  get first(): T | undefined {
    return this.#head;
  }

  /** The member added last and still in. */
  get last(): T | undefined {
    return this.#tail;
  }

  /** Adds `item` last (it must not be in a list). */
  push(item: T): void {
    item.prevLink = this.#tail;
    item.nextLink = undefined;
    if (this.#tail === undefined) this.#head = item;
    else this.#tail.nextLink = item;
    this.#tail = item;
    this.#size++;
  }

  /** Unlinks `item`; a no-op for one not in the list. */
  delete(item: T): void {
    const prev = item.prevLink as T | undefined;
    const next = item.nextLink as T | undefined;
    if (prev === undefined && this.#head !== item) return;
    if (prev === undefined) this.#head = next;
    else prev.nextLink = next;
    if (next === undefined) this.#tail = prev;
    else next.prevLink = prev;
    item.prevLink = item.nextLink = undefined;
    this.#size--;
  }

  /** The members now, oldest first (a copy: what is done to one may unlink it). */
  snapshot(): T[] {
    const out: T[] = [];
    for (let item = this.#head; item !== undefined; item = item.nextLink as T | undefined) out.push(item);
    return out;
  }
}
