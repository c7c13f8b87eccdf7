// A serverless / fetch-style handler built from the core alone: no signals, no RSS reader,
// no timer left running at module scope (the deadline wheel runs only while a request is in
// flight, and the load monitor and memory ceiling are off without a Host).
//   export default { fetch } — Deno Deploy, Bun, Cloudflare-style runtimes, or any fetch router.
// The platform owns the server and its stop: there is no drain here (drainTimeoutMs only
// bounds the request timeout); README: "Other entry points".
// Such a platform hands the handler no peer address: a keyed limit added here (rateLimits,
// inFlightPerKey) needs a clientKey that reads the platform's client address (on Cloudflare,
// `(r) => r.headers.get("cf-connecting-ip") ?? "unknown"`), or every client shares the key
// "unknown" (README: "Other entry points").
import { createGuard } from "../src/mod.ts";

const guard = createGuard({
  concurrencyLimit: 64,
  requestTimeoutMs: 10_000,
  drainTimeoutMs: 15_000,
  bodyLimitBytes: 64 * 1024,
});

async function app(request: Request, { context }: { context: { signal: AbortSignal } }): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/echo" && request.method === "POST") {
    const text = await request.text();
    return new Response(text, { headers: { "content-type": "text/plain" } });
  }
  if (url.pathname === "/wait") {
    const ms = Number(url.searchParams.get("ms") ?? 0);
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(resolve, ms);
      context.signal.addEventListener("abort", () => (clearTimeout(t), reject(context.signal.reason)), { once: true });
    });
    return new Response("waited");
  }
  return new Response("hello from the edge", { headers: { "content-type": "text/plain" } });
}

const fetch = guard.wrap(app);

export default { fetch };
