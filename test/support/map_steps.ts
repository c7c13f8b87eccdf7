// Counts the entries every Map iterator hands out while installed: an operation count of
// how much of a key table a limiter examines, so tests assert work done, never time.
// Patching the prototype is observable to every Map in the process: install it around the
// synchronous section under test only, and always restore it (try/finally).

/** A live count of Map iterator steps; `restore()` puts the original methods back. */
export interface MapSteps {
  readonly count: number;
  restore(): void;
}

export function countMapSteps(): MapSteps {
  const proto = Map.prototype as unknown as Record<PropertyKey, (...args: unknown[]) => Iterator<unknown>>;
  const names: PropertyKey[] = ["entries", "keys", "values", Symbol.iterator];
  const originals = new Map(names.map((n) => [n, Object.getOwnPropertyDescriptor(proto, n)!]));
  let count = 0;
  for (const name of names) {
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
  return {
    get count() {
      return count;
    },
    restore() {
      for (const [name, descriptor] of originals) Object.defineProperty(proto, name, descriptor);
    },
  };
}
