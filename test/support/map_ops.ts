// Counts Map operations while installed — every get/has/set/delete call and every entry an
// iterator hands out — as an operation count of how much of a key table a limiter touches,
// so tests assert work done, never time. Patching the prototype is observable to every Map
// in the process: install it around the synchronous section under test only, and always
// restore it (try/finally).

/** A live count of Map operations; `restore()` puts the original methods back. */
export interface MapOps {
  readonly count: number;
  restore(): void;
}

export function countMapOps(): MapOps {
  const proto = Map.prototype as unknown as Record<PropertyKey, (...args: unknown[]) => unknown>;
  const iterators: PropertyKey[] = ["entries", "keys", "values", Symbol.iterator];
  const calls: PropertyKey[] = ["get", "has", "set", "delete"];
  const originals = new Map([...iterators, ...calls].map((n) => [n, Object.getOwnPropertyDescriptor(proto, n)!]));
  let count = 0;
  for (const name of iterators) {
    const original = originals.get(name)!.value as (...args: unknown[]) => Iterator<unknown>;
    Object.defineProperty(proto, name, {
      ...originals.get(name)!,
      value: function (this: unknown, ...args: unknown[]) {
        const inner = original.apply(this, args);
        const counted = {
          next() {
            const step = inner.next();
            if (!step.done) count++;
            return step;
          },
          [Symbol.iterator]() {
            return counted;
          },
        };
        return counted;
      },
    });
  }
  for (const name of calls) {
    const original = originals.get(name)!.value as (...args: unknown[]) => unknown;
    Object.defineProperty(proto, name, {
      ...originals.get(name)!,
      value: function (this: unknown, ...args: unknown[]) {
        count++;
        return original.apply(this, args);
      },
    });
  }
  return {
    get count() {
      return count;
    },
    restore() {
      for (const [name, descriptor] of originals) Object.defineProperty(proto, name, descriptor);
    },
  };
}
