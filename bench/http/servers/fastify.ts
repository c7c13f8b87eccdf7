// Fastify servers on Node (run from the tsc build): node fastify.js <variant>
//   stack           part 1: Fastify + @fastify/rate-limit + @fastify/under-pressure, gates not tripping
//   under-pressure  part 2: the same handlers as the other servers behind @fastify/under-pressure
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import rateLimit from "@fastify/rate-limit";
import underPressure from "@fastify/under-pressure";
import { announce, args, BODY, burn, IO_BURN_MS, IO_WAIT_MS, sleep, turn } from "./_shared.ts";

const { variant } = args(process.argv.slice(2));
const GiB = 1024 * 1024 * 1024;
const app = Fastify({ logger: false, bodyLimit: 1024 * 1024, requestTimeout: 20_000 });

const reply = (request: FastifyRequest, res: FastifyReply, body: string) => {
  const t = request.headers["x-t"];
  if (typeof t === "string") res.header("x-t", t);
  return res.type("text/plain").send(body);
};

if (variant === "stack") {
  await app.register(underPressure, { maxEventLoopDelay: 1000, maxRssBytes: 8 * GiB, maxHeapUsedBytes: 4 * GiB });
  await app.register(rateLimit, { max: 1e12, timeWindow: 60_000 });
  app.get("/", (request, res) => reply(request, res, BODY));
} else if (variant === "under-pressure") {
  // The load monitor's high watermark (40 ms) as under-pressure's event-loop delay bound.
  await app.register(underPressure, { maxEventLoopDelay: 40 });
  app.get("/burn", (request, res) => {
    burn();
    return reply(request, res, "ok");
  });
  app.get("/burn-async", async (request, res) => {
    await turn();
    burn();
    return reply(request, res, "ok");
  });
  app.get("/io", async (request, res) => {
    await sleep(IO_WAIT_MS);
    burn(IO_BURN_MS);
    return reply(request, res, "ok");
  });
} else {
  console.error(`unknown variant ${variant}`);
  process.exit(2);
}
await app.listen({ port: 0, host: "127.0.0.1" });
announce((app.server.address() as { port: number }).port);
