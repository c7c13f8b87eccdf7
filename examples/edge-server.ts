// The example edge server: a Hono app behind the full stack.
//   npm start  |  deno run -A examples/edge-server.ts  |  bun run examples/edge-server.ts
// Configured from environment variables (see examples/edge/config.ts and the README); logs
// JSON lines; on SIGTERM (or Ctrl-C) it drains and logs the outcome, then exits with its code.
import { beginStartup } from "./edge/startup.ts";

// First, before the rest is loaded (examples/edge/startup.ts says why).
beginStartup();
await import("./edge/main.ts");
