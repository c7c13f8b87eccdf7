import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { type _Linked, _Running } from "../../../src/core/request/_running.ts";

class Item implements _Linked {
  prevRunning: Item | undefined = undefined;
  nextRunning: Item | undefined = undefined;
  constructor(readonly id: number) {}
}

describe("running handlers list", () => {
  test("running list: add, delete from the head, the middle and the tail; a non-member's delete is a no-op", () => {
    const list = new _Running<Item>();
    const [a, b, c, d] = [1, 2, 3, 4].map((id) => new Item(id)) as [Item, Item, Item, Item];
    list.delete(a); // never added
    assert.equal(list.size, 0);
    for (const item of [a, b, c, d]) list.add(item);
    assert.deepEqual(list.snapshot().map((i) => i.id), [4, 3, 2, 1]);
    list.delete(c); // middle
    list.delete(d); // head
    list.delete(a); // tail
    assert.deepEqual(list.snapshot().map((i) => i.id), [2]);
    list.delete(a); // twice
    list.delete(new Item(9)); // a stranger, while the list is not empty
    assert.equal(list.size, 1);
    list.delete(b);
    assert.deepEqual(list.snapshot(), []);
    assert.equal(list.size, 0);
    list.add(a); // re-added after leaving
    assert.deepEqual(list.snapshot().map((i) => i.id), [1]);
  });

  test("running list: matches a Set under any sequence of adds and deletes (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 7 })), { maxLength: 200 }), (ops) => {
        const items = Array.from({ length: 8 }, (_, i) => new Item(i));
        const list = new _Running<Item>();
        const model = new Set<Item>();
        for (const [add, i] of ops) {
          const item = items[i]!;
          if (add && !model.has(item)) {
            list.add(item);
            model.add(item);
          } else if (!add) {
            list.delete(item);
            model.delete(item);
          }
          assert.equal(list.size, model.size);
        }
        assert.deepEqual(new Set(list.snapshot()), model);
        assert.equal(list.snapshot().length, model.size);
      }),
    );
  });
});
