import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { _keyHash, _sha256 } from "../../../src/core/limits/_key_hash.ts";
import { runtime } from "../../support/runtime.ts";

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
const b64url = (b: Uint8Array) => btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

describe(`redis key hash (${runtime})`, () => {
  test(`SHA-256 matches the standard vectors (${runtime})`, () => {
    const enc = new TextEncoder();
    assert.equal(hex(_sha256(enc.encode(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    assert.equal(hex(_sha256(enc.encode("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert.equal(
      hex(_sha256(enc.encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  test(`SHA-256 agrees with Web Crypto on any key, one block or many (${runtime})`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 300 }), async (key) => {
        const bytes = new TextEncoder().encode(key);
        const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
        assert.equal(hex(_sha256(bytes)), hex(expected));
        assert.equal(_keyHash(key), b64url(expected.slice(0, 16)));
      }),
      { numRuns: 300 },
    );
  });

  test(`every length across the block and buffer edges hashes as Web Crypto does (${runtime})`, async () => {
    for (let n = 0; n <= 300; n++) {
      const key = "k".repeat(n);
      const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
      assert.equal(_keyHash(key), b64url(expected.slice(0, 16)), `length ${n}`);
    }
  });

  test(`a key of any content or length becomes 22 base64url characters (${runtime})`, () => {
    for (const key of ["", "10.0.0.1", "a\r\nDEL *", "x".repeat(100_000), "ключ 🔑"]) {
      assert.match(_keyHash(key), /^[A-Za-z0-9_-]{22}$/);
    }
    assert.notEqual(_keyHash("10.0.0.1"), _keyHash("10.0.0.2"));
  });

  test(`keys that differ only in a lone surrogate (which UTF-8 would turn into U+FFFD) hash apart (${runtime})`, async () => {
    const keys = ["alice\ud800", "alice\udfff", "alice\ufffd", "alice", "\ud800alice", "\udc00"];
    const hashes = keys.map(_keyHash);
    assert.equal(new Set(hashes).size, keys.length, JSON.stringify(hashes));
    for (const h of hashes) assert.match(h, /^[A-Za-z0-9_-]{22}$/);
    // A well-formed key hashes as before: the UTF-8 bytes.
    const expected = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode("alice\ufffd")));
    assert.equal(_keyHash("alice\ufffd"), b64url(expected.slice(0, 16)));
    assert.equal(_keyHash("x\ud83d\udd11"), _keyHash("x🔑"), "a surrogate pair is not lone");
  });
});
