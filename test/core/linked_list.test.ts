import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { type _Linked, _LinkedList } from "../../src/core/_linked_list.ts";

class Item implements _Linked {
  prevLink: Item | undefined = undefined;
  nextLink: Item | undefined = undefined;
  constructor(readonly id: number) {}
}

describe("linked list", () => {
  test("linked list: push, delete from the head, the middle and the tail; a non-member's delete is a no-op", () => {
    const list = new _LinkedList<Item>();
    const [a, b, c, d] = [1, 2, 3, 4].map((id) => new Item(id)) as [Item, Item, Item, Item];
    list.delete(a); // never added
    assert.equal(list.size, 0);
    assert.equal(list.first, undefined);
    for (const item of [a, b, c, d]) list.push(item);
    assert.deepEqual(list.snapshot().map((i) => i.id), [1, 2, 3, 4]);
    assert.equal(list.first, a);
    assert.equal(list.last, d);
    list.delete(c); // middle
    list.delete(a); // head
    assert.equal(list.first, b);
    list.delete(d); // tail
    assert.equal(list.last, b, "the tail's predecessor is the new last");
    assert.deepEqual(list.snapshot().map((i) => i.id), [2]);
    list.delete(a); // twice
    list.delete(new Item(9)); // a stranger, while the list is not empty
    assert.equal(list.size, 1);
    list.push(c); // after the tail was deleted: the new tail
    assert.deepEqual(list.snapshot().map((i) => i.id), [2, 3]);
    list.delete(b);
    list.delete(c);
    assert.deepEqual(list.snapshot(), []);
    assert.equal(list.size, 0);
    assert.equal(list.first, undefined);
    list.push(a); // re-added after leaving
    assert.deepEqual(list.snapshot().map((i) => i.id), [1]);
  });

  test("linked list: keeps a Set's members and insertion order under any sequence of pushes and deletes (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 7 })), { maxLength: 200 }), (ops) => {
        const items = Array.from({ length: 8 }, (_, i) => new Item(i));
        const list = new _LinkedList<Item>();
        const model = new Set<Item>();
        for (const [add, i] of ops) {
          const item = items[i]!;
          if (add && !model.has(item)) {
            list.push(item);
            model.add(item);
          } else if (!add) {
            list.delete(item);
            model.delete(item);
          }
          assert.equal(list.size, model.size);
          assert.equal(list.first, model.values().next().value);
        }
        assert.deepEqual(list.snapshot(), [...model]);
      }),
    );
  });
});
