// The subset of YAML the deploy units use, parsed for their tests (no YAML package is a
// dependency): block maps and block lists by indentation, flow lists of scalars
// (`["a", "b"]`), plain and quoted scalars, and `#` comments. Anything else (anchors, merge
// keys, multi-line strings, flow maps) throws, so a unit that outgrows the subset fails its
// test instead of being read wrongly.

export type YamlValue = string | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  indent: number;
  text: string;
  no: number;
}

function scalar(raw: string, no: number): string {
  const s = raw.trim();
  if (/^[&*!|>]/.test(s) || s.startsWith("{")) throw new SyntaxError(`line ${no}: unsupported YAML: ${s}`);
  if (s.startsWith('"')) return JSON.parse(s) as string;
  if (s.startsWith("'")) return s.slice(1, -1).replace(/''/g, "'");
  return s;
}

function value(raw: string, no: number): YamlValue {
  const s = raw.trim();
  if (s.startsWith("[")) {
    if (!s.endsWith("]")) throw new SyntaxError(`line ${no}: unterminated flow list`);
    const inner = s.slice(1, -1).trim();
    if (inner === "") return [];
    // Split on commas outside quotes.
    const items = inner.match(/"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^,]+/g) ?? [];
    return items.map((i) => i.trim()).filter((i) => i !== "").map((i) => scalar(i, no));
  }
  return scalar(s, no);
}

/** Strips a comment that starts outside quotes. */
function uncomment(text: string): string {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]!))) return text.slice(0, i);
  }
  return text;
}

function block(lines: Line[], at: { i: number }, indent: number): YamlValue {
  const first = lines[at.i]!;
  if (first.text.startsWith("- ") || first.text === "-") {
    const list: YamlValue[] = [];
    while (at.i < lines.length && lines[at.i]!.indent === indent && lines[at.i]!.text.startsWith("-")) {
      const line = lines[at.i++]!;
      const rest = line.text.slice(1).trim();
      if (rest === "" || /^[^"'[][^:]*:(\s|$)/.test(rest)) throw new SyntaxError(`line ${line.no}: only lists of scalars are supported`);
      list.push(value(rest, line.no));
    }
    return list;
  }
  const map: { [key: string]: YamlValue } = {};
  while (at.i < lines.length && lines[at.i]!.indent === indent) {
    const line = lines[at.i++]!;
    const m = /^("[^"]*"|'[^']*'|[^:]+):(?:\s+(.*))?$/.exec(line.text);
    if (!m) throw new SyntaxError(`line ${line.no}: expected "key: value", got ${line.text}`);
    const key = scalar(m[1]!, line.no);
    if (key === "<<") throw new SyntaxError(`line ${line.no}: merge keys are not supported`);
    if (m[2] !== undefined && m[2].trim() !== "") map[key] = value(m[2], line.no);
    else if (at.i < lines.length && lines[at.i]!.indent > indent) map[key] = block(lines, at, lines[at.i]!.indent);
    else if (at.i < lines.length && lines[at.i]!.indent === indent && lines[at.i]!.text.startsWith("-")) map[key] = block(lines, at, indent);
    else map[key] = "";
  }
  if (at.i < lines.length && lines[at.i]!.indent > indent) throw new SyntaxError(`line ${lines[at.i]!.no}: unexpected indentation`);
  return map;
}

/** Parses `text`; throws a SyntaxError naming the line on anything outside the subset. */
export function parseYamlLite(text: string): YamlValue {
  const lines: Line[] = [];
  text.split("\n").forEach((raw, n) => {
    if (raw.includes("\t")) throw new SyntaxError(`line ${n + 1}: tabs are not YAML indentation`);
    const body = uncomment(raw).trimEnd();
    if (body.trim() === "" || body.trim() === "---") return;
    lines.push({ indent: body.length - body.trimStart().length, text: body.trim(), no: n + 1 });
  });
  if (lines.length === 0) return {};
  const at = { i: 0 };
  const out = block(lines, at, lines[0]!.indent);
  if (at.i !== lines.length) throw new SyntaxError(`line ${lines[at.i]!.no}: unexpected dedent`);
  return out;
}
