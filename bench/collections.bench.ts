// Cost of the bounded collections against the plain Map/array they wrap.
import { BoundedMap, Ring } from "../src/mod.ts";
import { measure, report } from "./_harness.ts";

const KEYS = Array.from({ length: 4096 }, (_, i) => `10.0.${i >> 8}.${i & 255}`);

const plain = new Map<string, number>();
const bounded = new BoundedMap<string, number>(4096, { idleTtlMs: 60_000 });
for (const k of KEYS) {
  plain.set(k, 0);
  bounded.set(k, 0);
}

report(
  "hot-key get",
  measure([
    { name: "Map.get", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += plain.get(KEYS[i & 4095]!)!; return s; } },
    { name: "BoundedMap.get (TTL on)", run: (n) => { let s = 0; for (let i = 0; i < n; i++) s += bounded.get(KEYS[i & 4095]!)!; return s; } },
  ]),
  "Map.get",
);

const ring = new Ring<number>(1024);
const arr: number[] = [];
report(
  "append",
  measure([
    { name: "Array.push + shift at 1024", run: (n) => { for (let i = 0; i < n; i++) { arr.push(i); if (arr.length > 1024) arr.shift(); } return arr.length; } },
    { name: "Ring.push (1024)", run: (n) => { for (let i = 0; i < n; i++) ring.push(i); return ring.length; } },
  ]),
  "Array.push + shift at 1024",
);
