// Part 6: what one 503 refusal costs the server. Each server holds the one permit of an
// in-flight limit of 1 with a request to /hold that never settles (sent by the runner on its
// own connection before the warm-up, and checked: a GET / must come back 503); then wrk -t1
// -c64 sends GET /, and every request is refused. Server CPU µs per refusal = the server's
// CPU over the measured run ÷ requests answered, the same method as part 1.
//   (r1) the 15-line in-flight cap (servers/_shared.ts inFlightCap) around the raw server;
//   (r2) serve-hygiene's serve() with every gate of part 1 on, concurrencyLimit 1 and no queue: each
//        refusal passes the cheaper gates before the concurrency limit, as a real one does;
//   (r4) Node only, (r2) with a 2 ms queue: each request is refused after its wait (no target).
// The issue's target: (r2) ≤ (r1) on each runtime.
import { request } from "node:http";
import { connect } from "node:net";
import { sleep } from "./_lib.mjs";
import { quietRatio, ratioInRounds, ratioSpread, runRounds } from "./_rounds.mjs";
import { envBlock, fmt, table } from "./_report.mjs";

const CONNECTIONS = 64;
/** (r4)'s wait: servers/_shared.ts WAITED_REFUSAL_MS. */
const WAITED_MS = 2;
const RAW = { node: "node:http", deno: "Deno.serve", bun: "Bun.serve" };

export function refusalCases(runtimes, baseline) {
  return runtimes.filter((rt) => RAW[rt]).flatMap((rt) => {
    const cap = { rt, id: "r1", label: `(r1) ${RAW[rt]} + the 15-line in-flight cap at 1, held`, file: rt, variant: "cap-hold", prepare: hold };
    const lib = { rt, id: "r2", label: `(r2) serve-hygiene/${rt} serve(), every gate on, concurrencyLimit 1 and no queue (shedWaitMs 0), held`, file: rt, variant: "guard-hold", lib: true, prepare: hold };
    // Bun: the cap that also reads each request's peer (requestIP, a system call), as the
    // per-IP gates before the concurrency limit must: the floor of (r2) there.
    // Node: the cap around a fetch handler on @hono/node-server, the Request/Response
    // translation serve() rests on: the floor of (r2) there.
    const peer = rt === "bun" ? [{ rt, id: "r3", label: `(r3) (r1) reading each request's peer first (requestIP)`, file: rt, variant: "cap-hold-peer", prepare: hold }]
      : rt === "node" ? [{ rt, id: "r3", label: `(r3) the same cap around a fetch handler on @hono/node-server (serve()'s translation)`, file: rt, variant: "cap-hold-fetch", prepare: hold }] : [];
    // Node: a refusal after a short wait in the admission queue (the head path's written from parts).
    const waited = rt === "node" ? [{ rt, id: "r4", label: `(r4) (r2) with a ${WAITED_MS} ms admission queue: each request refused after its wait (queue-timeout)`, file: rt, variant: "guard-hold-wait", lib: true, prepare: hold }] : [];
    const twins = (c) => [{ ...c, label: `${c.label} — after` }, { ...c, id: `${c.id}-before`, label: `${c.label} — before`, tree: baseline, before: true }];
    if (!baseline) return [cap, ...peer, lib, ...waited];
    return [cap, ...peer, ...twins(lib), ...waited.flatMap(twins)];
  });
}

export async function refusal({ runs, runtimes, quick, gen, env, baseline, slices: sliceCount = 1 }) {
  const warmS = quick ? 1 : 2;
  const seconds = quick ? 3 : 4;
  const slices = quick ? 1 : sliceCount;
  const cases = await runRounds({ cases: refusalCases(runtimes, baseline), runs, warmS, seconds, slices, connections: CONNECTIONS, gen });
  const by = (rt, id) => cases.find((c) => c.rt === rt && c.id === id);
  for (const c of cases) c.cpuXCap = ratioInRounds(c, by(c.rt, "r1"));
  const rts = runtimes.filter((rt) => RAW[rt]);
  const lines = rts.map((rt) => {
    const r2 = by(rt, "r2"), before = by(rt, "r2-before");
    return `- ${rt}: serve-hygiene ${fmt.us(r2?.cpuUsPerReq)} µs per refusal against the 15-line cap's ${fmt.us(by(rt, "r1")?.cpuUsPerReq)}: ${fmt.share(r2?.cpuXCap)}× (per-run ratios ${ratioSpread(r2, by(rt, "r1"))}; quiet runs ${fmt.share(quietRatio(r2, by(rt, "r1"), cases).ratio)}×, ${quietRatio(r2, by(rt, "r1"), cases).quiet} of ${r2?.runs.length}; target ≤ 1.00)` +
      `${before ? ` (before: ${fmt.us(before.cpuUsPerReq)} µs, ${fmt.share(before.cpuXCap)}×)` : ""} — ${r2?.cpuXCap <= 1 ? "met" : "**missed**"}.` +
      (by(rt, "r4") ? `\n  - (r4), a refusal after a ${WAITED_MS} ms wait (no target; a storm's usual refusal): ${fmt.us(by(rt, "r4").cpuUsPerReq)} µs, ${fmt.share(by(rt, "r4").cpuXCap)}× (r1)${by(rt, "r4-before") ? ` (before: ${fmt.us(by(rt, "r4-before").cpuUsPerReq)} µs; after ÷ before ${fmt.share(ratioInRounds(by(rt, "r4"), by(rt, "r4-before")))}×)` : ""}.` : "") +
      (by(rt, "r3") ? `\n  - ÷ (r3), ${rt === "node" ? "the cap behind the same translation" : "the cap reading each request's peer as a per-IP gate must"}: ${fmt.share(ratioInRounds(r2, by(rt, "r3")))}× ((r3) itself ${fmt.share(by(rt, "r3").cpuXCap)}× (r1)).` : "");
  });
  const md = [
    `# Part 6 — the cost of one 503 refusal${slices === 1 ? "" : ` (sliced: ${slices} slices a round)`}`,
    "",
    `Each server has an in-flight limit of 1 whose permit is held by one request to \`/hold\` that never settles (the runner sends it on its own connection, then checks that a GET / is answered 503).`,
    `wrk -t1 -c${CONNECTIONS} then sends GET /, ${warmS} s warm-up and ${seconds} s measured${slices === 1 ? "" : ` in ${slices} slices`}, and every request is refused. "CPU µs/refusal" is the server's utime+stime (/proc) over the measured ${slices === 1 ? "run" : "slice"} ÷ the requests answered — the same method as part 1.`,
    slices === 1
      ? `Median of ${runs} round(s), each run on a freshly started server; the ratio to (r1) is taken inside each round, then its median (the middle half of the per-round ratios after it, and the median over the quiet rounds alone, as in part 1). "refused" is the share of non-2xx answers (should be 100%: anything less means the hold was lost).`
      : `${runs} round(s), sliced as in part 1's \`--slices\` (a cross-check): a round starts every case of a runtime on a fresh server and warms each up, then measures the cases in turn, slice by slice (the order reversed every other slice, each slice after a 1 s re-warm); figures are medians over all slices, and the ratio to (r1) is taken inside each slice, then its median (the middle half of the per-slice ratios after it, and the median over the quiet slices alone). "refused" is the share of non-2xx answers (should be 100%: anything less means the hold was lost).`,
    `(r1) is the 15-line in-flight cap (\`inFlightCap\` in bench/http/servers/_shared.ts) around the raw server, answering a prebuilt 503 with the same headers and body as serve-hygiene's.`,
    `(r2) is serve-hygiene's \`serve()\` with part 1's every-gate-on options, \`concurrencyLimit: 1\` and \`shedWaitMs: 0\` (no admission queue: the request past the limit is refused at once, as the cap's is): the refusal is the concurrency limit's, after the draining, memory, load, framing, rate-limit and per-key gates have each passed the request.`,
    rts.includes("node") ? `(r4), Node only, is (r2) with a ${WAITED_MS} ms admission queue (\`shedWaitMs: ${WAITED_MS}\`): each request waits for the held permit, then is refused (\`queue-timeout\`) — the refusal a closed-loop storm mostly sends. It has no target; its rate is bound by the wait as much as by the CPU, so compare its CPU µs per refusal, not its refusals a second.` : "",
    baseline ? `"after" is this checkout (${env.current}); "before" is ${baseline.ref} (${baseline.commit.slice(0, 10)}), the library exported from git and served by the same server files, run in the same rounds.` : "",
    "",
    envBlock(env),
    "",
    "## Target (issue 13): a refusal costs no more than the 15-line cap's",
    "",
    ...lines,
    "",
  ];
  for (const rt of rts) {
    md.push(`## ${rt} ${env[rt]}`, "", table(
      ["server", "refusals/s", "p99 ms", "CPU µs/refusal", "÷ (r1)", "server CPU", "refused", "refusals by layer"],
      cases.filter((c) => c.rt === rt).map((c) => [
        c.label + (c.failed ? ` (${c.failed} run(s) failed)` : "") + (c.errors ? ` (${c.errors} socket errors)` : ""),
        fmt.int(c.rps), fmt.ms(c.p99Us), fmt.us(c.cpuUsPerReq), fmt.share(c.cpuXCap), fmt.pct(c.cpuShare),
        c.non2xxShare < 0.99 ? `**${fmt.pct(c.non2xxShare)}**` : fmt.pct(c.non2xxShare), c.denials ? `\`${c.denials}\`` : "",
      ]),
    ), "");
  }
  const summary = cases.map((c) => `${c.rt} ${c.id}: ${fmt.us(c.cpuUsPerReq)} µs CPU/refusal (÷ cap ${fmt.share(c.cpuXCap)}), refused ${fmt.pct(c.non2xxShare)}`).join("\n");
  const json = { env, baseline: baseline && { ref: baseline.ref, commit: baseline.commit }, cases: cases.map(({ tree, prepare, ...c }) => c) };
  const name = slices === 1 ? "refusal" : "refusal-sliced";
  return { files: { [`${name}.md`]: md.join("\n"), [`${name}.json`]: JSON.stringify(json, null, 1) }, summary };
}

/**
 * Parks one GET /hold on its own connection (the handler never settles, so it holds the
 * limit's one permit), then waits (bounded) until a GET / is refused. Returns the undo.
 */
async function hold(server) {
  const socket = connect(server.port, "127.0.0.1");
  socket.on("error", () => {});
  socket.write(`GET /hold HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
  const undo = () => socket.destroy();
  for (const until = Date.now() + 10_000; Date.now() < until;) {
    if ((await status(server.port)) === 503) return undo;
    await sleep(50);
  }
  undo();
  throw new Error("the held /hold request did not make GET / refused within 10 s");
}

/** The status of one GET / on a fresh connection (0 on a socket error), bounded to 2 s. */
function status(port) {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/", agent: false, headers: { connection: "close" }, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(0));
    req.end();
  });
}
