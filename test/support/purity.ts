// The rule that keeps src/core runtime-agnostic, as a function so the rule itself is tested.

const RULES: readonly [RegExp, string][] = [
  [/\bDeno\./, "Deno global"],
  [/\bBun\./, "Bun global"],
  [/\bprocess\./, "process global"],
  [/\bfrom\s*["']node:/, "node:* import"],
  [/\bimport\s*\(\s*["']node:/, "node:* dynamic import"],
  [/\brequire\s*\(\s*["']node:/, "node:* require"],
];

/** Lines of `source` that name a runtime global or import node:*, comments included. */
export function runtimeMentions(source: string): { line: number; what: string; text: string }[] {
  const found: { line: number; what: string; text: string }[] = [];
  source.split("\n").forEach((text, i) => {
    for (const [re, what] of RULES) if (re.test(text)) found.push({ line: i + 1, what, text: text.trim() });
  });
  return found;
}
