import type { IncomingMessage } from "node:http";
import { peerAddress, type PeerAddress } from "../../core/mod.ts";

/** The transport peer of a node request. */
export function peerOf(req: IncomingMessage): PeerAddress | undefined {
  const s = req.socket;
  if (s.remoteAddress === undefined) return undefined;
  return peerAddress(s.remoteAddress, s.remotePort, s.remoteFamily);
}
