import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { clientKey, createClientKey } from "../../../src/core/limits/client_key.ts";
import { runtime } from "../../support/runtime.ts";

const req = (headers: Record<string, string> = {}) => new Request("http://example.test/", { headers });
const peer = (address: string) => ({ peer: { address } });

describe("client key", () => {
  test("client key: the default key is the peer's IPv4 address, port dropped", () => {
    assert.equal(clientKey(req(), peer("192.0.2.7")), "192.0.2.7");
    assert.equal(clientKey(req(), peer("192.0.2.7:51234")), "192.0.2.7");
  });

  test("client key: IPv4-mapped IPv6 reads as IPv4", () => {
    assert.equal(clientKey(req(), peer("::ffff:192.0.2.7")), "192.0.2.7");
    assert.equal(clientKey(req(), peer("::FFFF:c000:0207")), "192.0.2.7");
    assert.equal(clientKey(req(), peer("[::ffff:192.0.2.7]:443")), "192.0.2.7");
  });

  test("client key: IPv6 is keyed by its /64, so rotating addresses share one bucket", () => {
    const key = createClientKey();
    const a = key(req(), peer("2001:db8:1:2:aaaa:bbbb:cccc:dddd"));
    const b = key(req(), peer("2001:0DB8:0001:0002::1"));
    assert.equal(a, "2001:db8:1:2::/64");
    assert.equal(b, a);
    assert.notEqual(key(req(), peer("2001:db8:1:3::1")), a);
  });

  test("client key: the IPv6 prefix is configurable, e.g. /56", () => {
    const key = createClientKey({ ipv6Prefix: 56 });
    assert.equal(key(req(), peer("2001:db8:1:2ff::1")), "2001:db8:1:200::/56");
    assert.equal(createClientKey({ ipv6Prefix: 128 })(req(), peer("2001:db8::1")), "2001:db8::1/128");
  });

  test("client key: IPv6 text is canonical (RFC 5952): lowercase, zero runs compressed, zone stripped", () => {
    const key = createClientKey({ ipv6Prefix: 128 });
    assert.equal(key(req(), peer("2001:DB8:0:0:1:0:0:1")), "2001:db8::1:0:0:1/128");
    assert.equal(key(req(), peer("fe80::1%eth0")), "fe80::1/128");
    assert.equal(key(req(), peer("::1")), "::1/128");
    assert.equal(key(req(), peer("::")), "::/128");
    assert.equal(key(req(), peer("1:0:1:1:1:1:1:1")), "1:0:1:1:1:1:1:1/128", "a single zero group is not compressed");
    assert.equal(key(req(), peer("64:ff9b::192.0.2.33")), "64:ff9b::c000:221/128", "embedded IPv4");
    assert.equal(key(req(), peer("1:2:3:4:5:6:7::")), "1:2:3:4:5:6:7:0/128");
  });

  test("client key: no peer (serverless) or a peer that is not an IP gives the fixed unknown key", () => {
    assert.equal(clientKey(req(), {}), "unknown");
    assert.equal(clientKey(req()), "unknown");
    assert.equal(clientKey(req(), peer("/run/app.sock")), "unknown");
    assert.equal(createClientKey({ unknownKey: "anon" })(req(), {}), "anon");
  });

  test("client key: forwarding headers from an untrusted peer are ignored", () => {
    const headers = { "x-forwarded-for": "203.0.113.9", forwarded: "for=203.0.113.9" };
    assert.equal(clientKey(req(headers), peer("198.51.100.1")), "198.51.100.1");
    const key = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
    assert.equal(key(req(headers), peer("198.51.100.1")), "198.51.100.1");
  });

  test("client key: an IPv4 octet over 255 is no address: a forwarded one is keyed as an id, a trusted proxy naming one is refused", () => {
    const key = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
    assert.equal(key(req({ "x-forwarded-for": "1.2.3.256" }), peer("10.0.0.1")), "id:1.2.3.256");
    assert.equal(key(req({ "x-forwarded-for": "1.2.3.255" }), peer("10.0.0.1")), "1.2.3.255");
    assert.throws(() => createClientKey({ trustedProxies: ["10.0.0.256"] }), /"trustedProxies" must list CIDRs: current value is "10.0.0.256"/);
  });

  test("client key: X-Forwarded-For from a trusted proxy is walked from the right, skipping trusted hops", () => {
    const key = createClientKey({ trustedProxies: ["10.0.0.0/8", "2001:db8:ffff::/48"] });
    const via = (xff: string) => key(req({ "x-forwarded-for": xff }), peer("10.1.1.1"));
    assert.equal(via("203.0.113.9"), "203.0.113.9");
    assert.equal(via("1.1.1.1, 203.0.113.9, 10.0.0.5"), "203.0.113.9", "a forged left part is never reached");
    assert.equal(via("203.0.113.9:4711, [2001:db8:ffff::1]:80"), "203.0.113.9");
    assert.equal(via("2001:db8:5:6::7, 10.2.2.2"), "2001:db8:5:6::/64");
    assert.equal(via("10.9.9.9, 10.0.0.5"), "10.9.9.9", "every hop trusted: the leftmost");
  });

  test("client key: Forwarded (RFC 7239) is read when chosen, quoted IPv6 with port included", () => {
    const key = createClientKey({ trustedProxies: ["10.0.0.0/8"], proxyHeader: "forwarded" });
    const via = (value: string) => key(req({ forwarded: value }), peer("10.0.0.1"));
    assert.equal(via('for="[2001:db8::1]:4711"'), "2001:db8::/64");
    assert.equal(via("for=192.0.2.60;proto=http;by=203.0.113.43"), "192.0.2.60");
    assert.equal(via('for=198.51.100.17, For="10.0.0.3";proto=https'), "198.51.100.17");
    assert.equal(via('for="a,b"; by=x, for=192.0.2.1'), "192.0.2.1", "a comma inside quotes does not split");
    assert.equal(via('for="203.0.113.9:_conn1"'), "203.0.113.9", "an obfuscated port (RFC 7239 §6.3) is still the address's");
    assert.equal(via('for="[2001:db8::1]:_x-1.y"'), "2001:db8::/64");
    assert.equal(via('for="203.0.113.9:_"'), "id:203.0.113.9:_", "an obfuscated port has at least one character");
    assert.equal(key(req({ "x-forwarded-for": "203.0.113.9" }), peer("10.0.0.1")), "10.0.0.1", "the other header is not read");
  });

  test("client key: what a client writes to the left of the trusted proxies' Forwarded elements cannot change the key", () => {
    const key = createClientKey({ trustedProxies: ["10.0.0.0/8"], proxyHeader: "forwarded" });
    // The client's own Forwarded line, then the proxy's element for it, as the server sees the
    // two (Headers joins repeated fields with ", "; a proxy appending to the value gives the same).
    const via = (clientSent: string, proxyWrote = "for=203.0.113.9") => {
      const headers = new Headers();
      headers.append("forwarded", clientSent);
      headers.append("forwarded", proxyWrote);
      return key(new Request("http://example.test/", { headers }), peer("10.0.0.2"));
    };
    for (const forged of ['for=198.51.100.1;x="', 'for="', '"', 'for=198.51.100.1, x="a\\', "for=198.51.100.1\\", 'for=", by="']) {
      assert.equal(via(forged), "203.0.113.9", `the client sent ${JSON.stringify(forged)}`);
    }
    // Through a trusted hop: the element to its left is read as its proxy wrote it (an escaped quote and a comma inside quotes).
    assert.equal(via('for=198.51.100.1;x="', 'for=203.0.113.9, for=10.0.0.3'), "203.0.113.9");
    assert.equal(via('x="', 'for="_a\\"b,c", for=10.0.0.3'), 'id:_a"b,c');
  });

  test("client key: an entry that is not an address, where the trusted chain ends, is the client: a stable derived key, never the proxy's own", () => {
    const xff = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
    const via = (value: string) => xff(req({ "x-forwarded-for": value }), peer("10.0.0.1"));
    for (const value of ["garbage", "garbage, 10.0.0.7", "300.1.1.1", "01.2.3.4", "1.2.3.4:99999", "[::1", "::1]:80", "1.2.3"]) {
      const client = value.split(",")[0]!.trim();
      assert.equal(via(value), `id:${client}`, `xff ${JSON.stringify(value)}`);
    }
    assert.equal(via("garbage"), via("garbage"), "stable: the same entry is the same bucket");
    assert.notEqual(via("garbage"), via("other-garbage"));
    assert.equal(via("x".repeat(500)), `id:${"x".repeat(64)}`, "a derived key is at most 64 characters of the entry");
    for (const value of ["1.2.3.4,", "1.2.3.4,,", ",", "", " ", "unknown", "UNKNOWN, 10.0.0.7"]) {
      assert.equal(via(value), "unknown", `xff ${JSON.stringify(value)}: an empty or unknown client is the unknown key`);
    }
    assert.equal(createClientKey({ trustedProxies: ["10.0.0.0/8"], unknownKey: "anon" })(req({ "x-forwarded-for": "1.2.3.4," }), peer("10.0.0.1")), "anon");
    const fwd = createClientKey({ trustedProxies: ["10.0.0.0/8"], proxyHeader: "forwarded" });
    const viaFwd = (value: string) => fwd(req({ forwarded: value }), peer("10.0.0.1"));
    assert.equal(viaFwd("for=_hidden, for=10.0.0.4"), "id:_hidden", "an obfuscated client (RFC 7239) keeps its own bucket");
    assert.equal(viaFwd('for="_gazonk"'), "id:_gazonk");
    assert.equal(viaFwd("for=unknown"), "unknown");
    assert.equal(viaFwd("for=garbage"), "id:garbage");
    for (const value of ['for="1.2.3.4', "for", "for=", 'for="1.2.3.4" junk', "for=1.2.3.4;for=5.6.7.8", ";;;", "by=1.2.3.4", "for=1.2.3.4,"]) {
      assert.equal(viaFwd(value), "unknown", `forwarded ${JSON.stringify(value)}: no usable client`);
    }
    assert.equal(xff(req(), peer("10.0.0.1")), "10.0.0.1", "no header at all: the proxy itself is the client");
  });

  test("client key: trusted proxies match IPv4-mapped peers and single addresses", () => {
    const key = createClientKey({ trustedProxies: ["192.0.2.1", "::ffff:10.0.0.0/104"] });
    assert.equal(key(req({ "x-forwarded-for": "203.0.113.9" }), peer("::ffff:192.0.2.1")), "203.0.113.9");
    assert.equal(key(req({ "x-forwarded-for": "203.0.113.9" }), peer("10.3.3.3")), "203.0.113.9");
    assert.equal(key(req({ "x-forwarded-for": "203.0.113.9" }), peer("192.0.2.2")), "192.0.2.2");
  });

  test("client key: an IPv6 CIDR covers the IPv4(-mapped) peers inside it: ::/0 trusts every peer", () => {
    const all = createClientKey({ trustedProxies: ["::/0"] });
    const xff = { "x-forwarded-for": "203.0.113.9" };
    assert.equal(all(req(xff), peer("::ffff:192.0.2.1")), "203.0.113.9", "an IPv4-mapped peer");
    assert.equal(all(req(xff), peer("192.0.2.1")), "203.0.113.9", "the same peer as a dual-stack socket may not report it mapped");
    assert.equal(all(req(xff), peer("2001:db8::1")), "203.0.113.9");
    const docs = createClientKey({ trustedProxies: ["2001:db8::/32"] });
    assert.equal(docs(req(xff), peer("::ffff:192.0.2.1")), "192.0.2.1", "an IPv6 network without the mapped range does not");
    const v4 = createClientKey({ trustedProxies: ["0.0.0.0/0"] });
    assert.equal(v4(req(xff), peer("2001:db8::1")), "2001:db8::/64", "an IPv4 CIDR never covers IPv6");
  });

  test("client key: invalid CIDRs throw at creation, naming the value", () => {
    assert.throws(() => createClientKey({ trustedProxies: ["10.0.0.0/33"] }), {
      name: "RangeError",
      message: 'Cannot create client key as "trustedProxies" must list CIDRs: current value is "10.0.0.0/33"',
    });
    assert.throws(() => createClientKey({ trustedProxies: ["2001:db8::/129"] }), RangeError);
    assert.throws(() => createClientKey({ trustedProxies: ["not-an-ip/8"] }), { name: "TypeError", message: /"not-an-ip\/8"/ });
    assert.throws(() => createClientKey({ trustedProxies: ["10.0.0.0/8x"] }), RangeError);
    assert.throws(() => createClientKey({ trustedProxies: [42 as never] }), TypeError);
    assert.throws(() => createClientKey({ ipv6Prefix: 0 }), RangeError);
    assert.throws(() => createClientKey({ proxyHeader: "x-real-ip" as never }), TypeError);
  });

  test("client key: property — never throws on arbitrary header strings, and answers a well-formed key", () => {
    const fwd = createClientKey({ trustedProxies: ["0.0.0.0/0", "::/0"], proxyHeader: "forwarded" });
    const xff = createClientKey({ trustedProxies: ["10.0.0.0/8"] });
    const shape = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f:]+\/64|unknown|id:[^]{1,64})$/;
    fc.assert(
      fc.property(fc.string({ unit: "binary-ascii", maxLength: 80 }), fc.string({ maxLength: 40 }), (header, address) => {
        let headers: Headers;
        try {
          headers = new Headers({ forwarded: header, "x-forwarded-for": header });
        } catch {
          return; // not a valid field value: a runtime would never hand it over
        }
        for (const key of [fwd, xff]) {
          assert.match(key({ headers }, peer("10.0.0.1")), shape);
          assert.match(key({ headers }, peer(address)), shape);
        }
      }),
    );
  });

  // V8 (Node): a slice of a header is a view of the whole header; a derived key kept in a key
  // table held it too (a review: 4,096 keys from 15 KB X-Forwarded-For entries held 58 MB).
  test(`client key: a derived id: key holds only its own characters, not the header it came from${runtime === "node" ? "" : ` (node only: V8's sliced strings; skipped on ${runtime})`}`, { skip: runtime !== "node" }, async () => {
    const v8 = await import("node:v8");
    const vm = await import("node:vm");
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as () => void;
    const key = createClientKey({ trustedProxies: ["127.0.0.0/8"] });
    const keys: string[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 2048; i++) {
      const request = new Request("http://x/", { headers: { "x-forwarded-for": `${i}-${"z".repeat(15_000)}` } });
      keys.push(key(request, { peer: { address: "127.0.0.1" } }));
    }
    gc();
    const grew = process.memoryUsage().heapUsed - before;
    assert.equal(keys[7], `id:7-${"z".repeat(62)}`);
    // 2,048 headers of 15 KB are 30 MB (60 as UTF-16 would be); the keys alone ~0.3 MB.
    assert.ok(grew < 8_000_000, `the heap grew ${(grew / 1e6).toFixed(1)} MB holding 2,048 derived keys`);
  });
});
