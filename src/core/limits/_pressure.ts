// Where a rate limiter charges an unseen key: its own entry, or — under table pressure — its
// network's shared entry. Not re-exported.
//
// The per-key table is bounded and never evicts a live entry, so a flood of distinct keys
// fills it. Rather than lock out every new client, an unseen key that finds it full (after
// the bounded prune) is charged to an entry of its network (IPv6 /48, IPv4 /24) in a second,
// smaller table: a /48 flooding with distinct /64s collapses into one budget, while a client
// of another network gets a budget of its own. A key whose network already has a live shared
// entry keeps being charged there even when the per-key table has room again, so it cannot
// step out of its network's budget into a fresh one; that ends with the shared entry. Keys
// that are not addresses (tenants, "unknown") have no network: denied "table-full" as before.
import { _KeyTable } from "./_key_table.ts";
import { _networkKey } from "./_ip.ts";

/** An unseen key's place: the table, the key in it, and its entry there if one exists. */
export interface _Place<E> {
  readonly table: _KeyTable<E>;
  readonly key: string;
  readonly entry: E | undefined;
  /** Charged to a network's shared entry: its denials report "table-full". */
  readonly pooled: boolean;
}

export class _PressuredTable<E> {
  /** One entry per key. */
  readonly keys: _KeyTable<E>;
  /** One shared entry per network, used while `keys` is full. A quarter of its size. */
  readonly networks: _KeyTable<E>;
  readonly #expiresAt: (entry: E) => number;

  constructor(maxKeys: number, expiresAt: (entry: E) => number) {
    this.keys = new _KeyTable(maxKeys, expiresAt);
    this.networks = new _KeyTable(Math.ceil(maxKeys / 4), expiresAt);
    this.#expiresAt = expiresAt;
  }

  /** Where the unseen `key` is charged at `now`; undefined when both tables are full. */
  place(key: string, now: number): _Place<E> | undefined {
    const networks = this.networks;
    let network: string | undefined;
    if (networks.length > 0) {
      network = _networkKey(key);
      const shared = network === undefined ? undefined : networks.get(network);
      if (shared !== undefined) {
        if (now < this.#expiresAt(shared)) return { table: networks, key: network!, entry: shared, pooled: true };
        networks.delete(network!);
      }
    }
    if (this.keys.makeRoom(now)) return { table: this.keys, key, entry: undefined, pooled: false };
    if (network === undefined) network = _networkKey(key);
    if (network === undefined) return undefined;
    if (!networks.makeRoom(now)) return undefined;
    return { table: networks, key: network, entry: undefined, pooled: true };
  }

  /** The least time until any entry may expire, for a Retry-After hint; at least 1 ms. */
  waitMs(now: number, most: number): number {
    const at = Math.min(this.keys.bound, this.networks.length > 0 ? this.networks.bound : Infinity);
    const wait = at - now;
    return wait >= 1 ? Math.min(wait, most) : 1;
  }
}
