import type { IncomingMessage } from "node:http";
import { _socketPeer, type PeerAddress } from "../../core/mod.ts";

/** The transport peer of a node request (read once per connection). */
export function peerOf(req: IncomingMessage): PeerAddress | undefined {
  return _socketPeer(req.socket);
}
