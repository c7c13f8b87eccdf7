import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { _envPeer, _socketPeer, peerAddress } from "../../../src/core/host/peer_address.ts";

describe("peerAddress", () => {
  test("peerAddress: an IPv4 peer keeps its address and port, family IPv4", () => {
    assert.deepEqual(peerAddress("127.0.0.1", 50123, "IPv4"), { address: "127.0.0.1", port: 50123, family: "IPv4" });
  });

  test("peerAddress: an IPv6 peer is family IPv6", () => {
    assert.deepEqual(peerAddress("::1", 443, "IPv6"), { address: "::1", port: 443, family: "IPv6" });
    assert.deepEqual(peerAddress("2001:db8::7", 80, 6), { address: "2001:db8::7", port: 80, family: "IPv6" });
    assert.deepEqual(peerAddress("10.0.0.1", 80, 4), { address: "10.0.0.1", port: 80, family: "IPv4" });
  });

  test("peerAddress: an IPv4-mapped peer of a dual-stack socket stays as the transport wrote it (client keys unmap it)", () => {
    assert.deepEqual(peerAddress("::ffff:127.0.0.1", 8, "IPv6"), { address: "::ffff:127.0.0.1", port: 8, family: "IPv6" });
    assert.deepEqual(peerAddress("::ffff:127.0.0.1", 8), { address: "::ffff:127.0.0.1", port: 8, family: "IPv6" });
  });

  test("peerAddress: a missing or unknown family is derived from the address", () => {
    assert.deepEqual(peerAddress("192.0.2.1", 1), { address: "192.0.2.1", port: 1, family: "IPv4" });
    assert.deepEqual(peerAddress("fe80::1%eth0", 1, undefined), { address: "fe80::1%eth0", port: 1, family: "IPv6" });
    assert.deepEqual(peerAddress("192.0.2.1", undefined, "unix"), { address: "192.0.2.1", port: undefined, family: "IPv4" });
    assert.equal(peerAddress("2001:db8::1").family, "IPv6");
  });

  test("_socketPeer: a socket's peer is read and mapped once, then the same for every request on the connection", () => {
    let reads = 0;
    const socket = {
      get remoteAddress() {
        reads++;
        return "::ffff:127.0.0.1";
      },
      remotePort: 50123,
      remoteFamily: "IPv6",
    };
    const first = _socketPeer(socket);
    assert.deepEqual(first, { address: "::ffff:127.0.0.1", port: 50123, family: "IPv6" });
    assert.equal(_socketPeer(socket), first);
    assert.equal(reads, 1);
    assert.ok(Object.isFrozen(first), "shared by the connection's requests: frozen");
    // Another connection has its own.
    assert.deepEqual(_socketPeer({ remoteAddress: "192.0.2.9", remotePort: 9 }), { address: "192.0.2.9", port: 9, family: "IPv4" });
  });

  test("_socketPeer: a socket that reports no address gives undefined, and that is not kept", () => {
    const socket: { remoteAddress?: string; remotePort?: number } = {};
    assert.equal(_socketPeer(socket), undefined);
    socket.remoteAddress = "10.0.0.2";
    socket.remotePort = 7;
    assert.deepEqual(_socketPeer(socket), { address: "10.0.0.2", port: 7, family: "IPv4" });
  });

  test("_envPeer: Deno's report of a client that reset its connection (0.0.0.0 or ::, port 0) is no peer, not an address every such client would share", () => {
    const request = new Request("http://x/");
    assert.equal(_envPeer({ remoteAddr: { hostname: "0.0.0.0", port: 0 } }, request), undefined);
    assert.equal(_envPeer({ remoteAddr: { hostname: "::", port: 0 } }, request), undefined);
    assert.deepEqual(_envPeer({ remoteAddr: { hostname: "0.0.0.0", port: 5 } }, request), { address: "0.0.0.0", port: 5 });
    assert.deepEqual(_envPeer({ remoteAddr: { hostname: "10.1.2.3", port: 0 } }, request), { address: "10.1.2.3", port: 0 });
  });
});

