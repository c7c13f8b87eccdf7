// A node-redis client for the shared-store tests, configured as the README advises: no
// offline queue (a call made while Redis is down fails at once), a quick fixed reconnect
// delay (so a test sees the recovery soon after Redis returns), and its connection errors
// swallowed (they are the expected noise of a test that kills Redis).
import { createClient } from "redis";

const create = (url: string) =>
  createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: 25, connectTimeout: 2_000 } });
export type NodeRedisClient = ReturnType<typeof create>;

/** Connects to `url`; resolves once the client is ready. */
export async function connectNodeRedis(url: string): Promise<NodeRedisClient> {
  const client = create(url);
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** Ends the client's connection at once (pending calls reject). Idempotent. */
export function closeNodeRedis(client: NodeRedisClient | undefined): void {
  try {
    client?.destroy();
  } catch {
    // already closed
  }
}
