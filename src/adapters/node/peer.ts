import type { IncomingMessage } from "node:http";
import type { PeerAddress } from "../../core/mod.ts";

/** The transport peer of a node request. */
export function peerOf(req: IncomingMessage): PeerAddress | undefined {
  const s = req.socket;
  if (s.remoteAddress === undefined) return undefined;
  return { address: s.remoteAddress, port: s.remotePort, family: s.remoteFamily === "IPv6" ? "IPv6" : "IPv4" };
}
