// Markdown tables and hand-written SVG bar charts for the results.

export const fmt = {
  int: (v) => (Number.isFinite(v) ? Math.round(v).toLocaleString("en") : "—"),
  ms: (us) => (!Number.isFinite(us) ? "—" : us >= 100_000 ? `${(us / 1000).toFixed(0)}` : us >= 10_000 ? `${(us / 1000).toFixed(1)}` : `${(us / 1000).toFixed(2)}`),
  us: (v) => (Number.isFinite(v) ? v.toFixed(v >= 100 ? 0 : 1) : "—"),
  x: (v) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "—"),
  share: (v) => (Number.isFinite(v) ? v.toFixed(2) : "—"),
  // Where a verdict turns on a share: 0.949 reads "0.95" at two decimals.
  share3: (v) => (Number.isFinite(v) ? v.toFixed(3) : "—"),
  pct: (v) => (Number.isFinite(v) ? `${(v * 100).toFixed(v < 0.1 && v > 0 ? 1 : 0)}%` : "—"),
};

export function table(header, rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

export function envBlock(env, extra = "") {
  const p = env.packages;
  return [
    `Machine: ${env.machine}. Node ${env.node}, Deno ${env.deno}, Bun ${env.bun}` + (env.loadGenerator ? `; load generator ${env.loadGenerator}.` : "."),
    `Peers: hono ${p.hono}, @hono/node-server ${p["@hono/node-server"]}, hono-rate-limiter ${p["hono-rate-limiter"]}, fastify ${p.fastify}, ` +
      `@fastify/rate-limit ${p["@fastify/rate-limit"]}, @fastify/under-pressure ${p["@fastify/under-pressure"]}, rate-limiter-flexible ${p["rate-limiter-flexible"]}.`,
    extra,
  ].filter(Boolean).join("\n");
}

const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/**
 * Horizontal grouped bars, one or more panels side by side.
 * panels: [{ title, max, ticks: [..], mark?: number, markLabel?, value: (row) => number, label: (row) => string }]
 * groups: [{ title, rows: [{ name, … }] }]
 */
export function barChart({ title, subtitle, panels, groups, labelWidth = 330, panelWidth = 300 }) {
  const barH = 16, gap = 5, groupGap = 26, top = 74, left = labelWidth, pad = 40;
  const rowsCount = groups.reduce((n, g) => n + g.rows.length, 0);
  const height = top + rowsCount * (barH + gap) + groups.length * groupGap + 30;
  const width = left + panels.length * (panelWidth + pad) + 10;
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(`<text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`);
  if (subtitle) out.push(`<text x="10" y="38" fill="#555">${esc(subtitle)}</text>`);
  const colors = ["#9aa5b1", "#2f7ed8", "#7cb5ec", "#1f5fa8", "#f7a35c", "#e4572e", "#8085e9", "#90ed7d", "#434348"];
  panels.forEach((p, pi) => {
    const x0 = left + pi * (panelWidth + pad);
    const scale = (v) => (Math.min(v, p.max) / p.max) * panelWidth;
    out.push(`<text x="${x0}" y="${top - 18}" font-weight="bold">${esc(p.title)}</text>`);
    for (const t of p.ticks) {
      const x = x0 + scale(t);
      out.push(`<line x1="${x}" y1="${top - 8}" x2="${x}" y2="${height - 24}" stroke="#e3e3e3"/>`);
      out.push(`<text x="${x}" y="${height - 10}" text-anchor="middle" fill="#777">${esc(p.tickLabel ? p.tickLabel(t) : t)}</text>`);
    }
    if (p.mark !== undefined) {
      const x = x0 + scale(p.mark);
      out.push(`<line x1="${x}" y1="${top - 8}" x2="${x}" y2="${height - 24}" stroke="#c0392b" stroke-dasharray="4 3"/>`);
      if (p.markLabel) out.push(`<text x="${x + 3}" y="${top - 3}" fill="#c0392b" font-size="10">${esc(p.markLabel)}</text>`);
    }
  });
  let y = top;
  for (const g of groups) {
    out.push(`<text x="10" y="${y + 12}" font-weight="bold">${esc(g.title)}</text>`);
    y += groupGap - 6;
    g.rows.forEach((row, ri) => {
      out.push(`<text x="${left - 8}" y="${y + barH - 4}" text-anchor="end">${esc(row.name)}</text>`);
      panels.forEach((p, pi) => {
        const x0 = left + pi * (panelWidth + pad);
        const v = p.value(row);
        const w = Number.isFinite(v) ? Math.max(1, (Math.min(v, p.max) / p.max) * panelWidth) : 0;
        out.push(`<rect x="${x0}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${row.color ?? colors[ri % colors.length]}"/>`);
        const text = p.label(row);
        const inside = w > panelWidth - 60;
        out.push(`<text x="${inside ? x0 + w - 4 : x0 + w + 4}" y="${y + barH - 4}" ${inside ? 'text-anchor="end" fill="#fff"' : 'fill="#222"'}>${esc(text)}</text>`);
      });
      y += barH + gap;
    });
    y += 6;
  }
  out.push(`</svg>`);
  return out.join("\n") + "\n";
}
