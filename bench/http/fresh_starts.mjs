// A diagnostic, not a measured benchmark: whether fresh servers refuse anything under part 1's
// hot-path load. Each of N servers (a variant of bench/http/servers, e.g. `guard`, `hono-hygiene`,
// `hono-adapter`) is started fresh and loaded as part 1 loads it (GET /, wrk -t1 -c64, no accept
// hold): 2 s, then 2 s more; the server's refusals by layer ({"denials"} lines on its stderr,
// warm-up included) are printed per server. Part 1's tables count the same refusals in their
// last column; this looks at many start-ups of one subject instead of one per round.
//   node bench/http/fresh_starts.mjs <node|deno|bun> <variant> [servers=5]
// Each server is one this script started, ended by its PID.
import { compileForNode, detectLoadGenerator, load, runtimes, sleep, stopServer, startServer } from "./_lib.mjs";

const [rt, variant, count = "5"] = process.argv.slice(2);
if (!(rt in runtimes) || variant === undefined || !(Number(count) >= 1)) {
  console.error("usage: node bench/http/fresh_starts.mjs <node|deno|bun> <variant> [servers=5]");
  process.exit(2);
}
if (rt === "node") compileForNode();
const gen = detectLoadGenerator();
let refusing = 0;
for (let i = 1; i <= Number(count); i++) {
  const server = await startServer(rt, rt, [variant, "-"], {});
  let denials = "";
  server.child.stderr.on("data", (chunk) => {
    for (const l of String(chunk).split("\n")) if (l.startsWith(`{"denials"`)) denials = l; // cumulative: the last one counts
  });
  try {
    const first = await load(gen, { port: server.port, path: "/", connections: 64, seconds: 2, timeoutS: 30 });
    const second = await load(gen, { port: server.port, path: "/", connections: 64, seconds: 2, timeoutS: 30 });
    await sleep(1_100); // the server prints its refusals a second after the last new one
    if (denials !== "") refusing++;
    const perSecond = (r) => Math.round((r.requests - r.non2xx) / r.seconds);
    console.log(`${rt} ${variant} server ${i}: ${perSecond(first)} then ${perSecond(second)} 2xx/s; refusals ${denials === "" ? "none" : denials}`);
  } finally {
    await stopServer(server);
  }
}
console.log(`${rt} ${variant}: ${refusing} of ${count} fresh servers refused`);
