// The fallback load generator when wrk is absent: autocannon, driven so that it prints the
// same one-line JSON summary as bench/http/summary.lua and latency.lua.
//   node _autocannon.mjs '{"url":…,"connections":64,"seconds":5,"timeoutS":10,"latency2xx":false}'
import autocannon from "autocannon";

const o = JSON.parse(process.argv[2]);
const hist = new Map();
const counts = { ok: 0, refused: 0, other: 0 };
const instance = autocannon({ url: o.url, connections: o.connections, duration: o.seconds, timeout: o.timeoutS ?? 10, ...(o.rate ? { overallRate: o.rate } : {}) });
instance.on("response", (_client, status, _bytes, responseTimeMs) => {
  if (status >= 200 && status < 300) {
    counts.ok++;
    const bucket = Math.floor((responseTimeMs * 1000) / 10) * 10;
    hist.set(bucket, (hist.get(bucket) ?? 0) + 1);
  } else if (status === 503) counts.refused++;
  else counts.other++;
});
instance.on("done", (r) => {
  const us = (ms) => Math.round(ms * 1000);
  const summary = {
    requests: r.requests.total,
    durationUs: Math.round(r.duration * 1e6),
    bytes: r.throughput.total,
    non2xx: r.non2xx,
    connectErrors: 0,
    readErrors: r.errors - r.timeouts,
    writeErrors: 0,
    timeouts: r.timeouts,
    p50Us: us(r.latency.p50),
    p99Us: us(r.latency.p99),
    maxUs: us(r.latency.max),
    meanUs: us(r.latency.mean),
  };
  if (o.latency2xx || o.rate) Object.assign(summary, counts, { untimed: 0, okHistUs: [...hist] });
  console.log(`WRK ${JSON.stringify(summary)}`);
});
