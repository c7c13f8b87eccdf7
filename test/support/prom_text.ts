// A tiny parser of the Prometheus text exposition format (0.0.4), enough for tests to
// assert families, label sets and values without string-matching whole lines.

export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PromText {
  readonly samples: readonly PromSample[];
  /** `# TYPE` of each family: "counter", "gauge", "histogram", … */
  readonly types: ReadonlyMap<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;

function _unescape(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function _number(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

function _labels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const at = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (m === null || LABEL.lastIndex === at) throw new SyntaxError(`bad labels in line: ${line}`);
    labels[m[1]!] = _unescape(m[2]!);
  }
  return labels;
}

/** Parses exposition text; throws a SyntaxError on a line it cannot read. */
export function parsePromText(text: string): PromText {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (m === null) throw new SyntaxError(`bad sample line: ${line}`);
    samples.push({ name: m[1]!, labels: _labels(m[2] ?? "", line), value: _number(m[3]!) });
  }
  return { samples, types };
}

/** The samples named `name`. */
export function samplesOf(text: PromText, name: string): PromSample[] {
  return text.samples.filter((s) => s.name === name);
}

/** The value of the one sample named `name` with exactly `labels`, or undefined when there is none. */
export function valueOf(text: PromText, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  const hit = samplesOf(text, name).filter((s) => JSON.stringify(Object.entries(s.labels).sort()) === want);
  if (hit.length > 1) throw new Error(`${hit.length} samples of ${name} with labels ${want}`);
  return hit[0]?.value;
}
