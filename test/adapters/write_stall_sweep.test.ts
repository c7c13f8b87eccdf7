// The Node adapter's write-stall sweep (src/adapters/node/sockets.ts), over sockets that only
// report their sending as node's do: one whose client stopped reading is closed, and a pause of
// the process (here, the loop blocked) longer than the bound cuts none (the clocks review: after
// a 2.5 s SIGSTOP every download of a 48 MiB answer was cut at the first sweep, at a 1 s bound).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { _sweepStalled } from "../../src/adapters/node/sockets.ts";
import { runtime } from "../support/runtime.ts";

/** A socket with 1 MiB waiting for the kernel, sending nothing, until `destroy`. */
function stuckSocket() {
  const s = { writableLength: 1 << 20, bytesWritten: 1 << 20, _handle: { writeQueueSize: 1 << 20 }, destroyed: false, destroy() { s.destroyed = true; } };
  return s;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const block = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

describe(`write-stall sweep (${runtime})`, () => {
  test(`write-stall sweep: a socket sending nothing is closed after the bound, but not at the first sweep after the loop stood still longer than it (${runtime})`, { timeout: 20_000 }, async () => {
    const socket = stuckSocket();
    const stop = _sweepStalled(new Set([socket as unknown as Socket]), 400, () => {}); // sweeps every 100 ms
    // Since when the sweep has seen it send nothing (its own record on the socket).
    const since = () => {
      const key = Object.getOwnPropertySymbols(socket).find((k) => k.description === "serve-hygiene sending stalled since");
      return key === undefined ? undefined : (socket as unknown as Record<symbol, number | undefined>)[key];
    };
    try {
      while (since() === undefined) await sleep(5); // seen by a sweep: its stall counts from there
      block(1_000); // the process paused: nothing could be sent, by anyone
      const resumed = performance.now();
      // The first sweep after the pause: the stall is counted again from it (or, before the fix, the socket closed).
      while (!socket.destroyed && since()! < resumed) await sleep(5);
      assert.equal(socket.destroyed, false, "the pause is not the client's stall");
      for (let waited = 0; !socket.destroyed && waited < 10_000; waited += 20) await sleep(20);
      assert.equal(socket.destroyed, true, "still sending nothing afterwards: closed");
    } finally {
      stop();
    }
  });
});
