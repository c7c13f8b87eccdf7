// This runtime's own server (Bun.serve, Deno.serve, @hono/node-server's serve), for apps that
// run hygiene() themselves: an app served by serve-hygiene's serve() is guarded by serve(), and
// hygiene() steps aside there.
import { runtime } from "./runtime.ts";

export type Fetch = (request: Request, env?: unknown) => Response | Promise<Response>;

/** Serves `fetch` on 127.0.0.1, port 0, with this runtime's own server. */
export async function ownServer(fetch: Fetch): Promise<{ port: number; close: () => Promise<void> }> {
  const g = globalThis as unknown as Record<string, any>;
  if (runtime === "bun") {
    const server = g.Bun.serve({ port: 0, hostname: "127.0.0.1", fetch });
    return { port: server.port, close: async () => void (await server.stop(true)) };
  }
  if (runtime === "deno") {
    const server = g.Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, fetch);
    return { port: server.addr.port, close: () => server.shutdown() };
  }
  const { serve } = await import("@hono/node-server");
  return await new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
      resolve({
        port: info.port,
        close: () => new Promise<void>((done) => ((server as unknown as { closeAllConnections(): void }).closeAllConnections(), server.close(() => done()))),
      }));
  });
}
