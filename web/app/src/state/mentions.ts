import type { Employee } from '../api/types';

/** The `@query` being typed just before the caret, if any (the start of the `@` and the text after it). */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const m = /(^|[^\p{L}\p{N}_])@([^\s@]{0,40})$/u.exec(before);
  if (!m) return null;
  return { start: caret - m[2].length - 1, query: m[2] };
}

/** Employees whose name or login starts with the query (without case), names first. */
export function mentionCandidates(employees: readonly Employee[], q: string, limit = 6): Employee[] {
  const key = q.toLocaleLowerCase();
  return employees
    .filter((e) => (e.name ?? '').toLocaleLowerCase().startsWith(key) || e.login.toLocaleLowerCase().startsWith(key))
    .slice(0, limit);
}

/** Replaces the `@query` at `start` with `@Name ` and answers the new text and caret. */
export function insertMention(text: string, start: number, caret: number, e: Employee): { text: string; caret: number } {
  const label = `@${e.name || e.login} `;
  return { text: text.slice(0, start) + label + text.slice(caret), caret: start + label.length };
}

/**
 * Splits a note's text into plain parts and the mentions of the given employees (the server's
 * rule: `@` + a name or login, longest first, not inside a word), for highlighting.
 */
export function splitMentions(text: string, mentioned: readonly Employee[]): Array<{ text: string; userId?: number }> {
  const keys = mentioned
    .flatMap((e) => [e.name, e.login].filter((n): n is string => !!n).map((n) => ({ id: e.id, key: n.toLocaleLowerCase() })))
    .sort((a, b) => b.key.length - a.key.length);
  const out: Array<{ text: string; userId?: number }> = [];
  const lower = text.toLocaleLowerCase();
  let plain = 0;
  for (let at = lower.indexOf('@'); at !== -1; at = lower.indexOf('@', at + 1)) {
    if (at > 0 && /[\p{L}\p{N}_]/u.test(lower[at - 1])) continue;
    const rest = lower.slice(at + 1);
    const hit = keys.find((k) => rest.startsWith(k.key) && !/[\p{L}\p{N}_]/u.test(rest.charAt(k.key.length)));
    if (!hit) continue;
    if (at > plain) out.push({ text: text.slice(plain, at) });
    out.push({ text: text.slice(at, at + 1 + hit.key.length), userId: hit.id });
    plain = at + 1 + hit.key.length;
    at = plain - 1;
  }
  if (plain < text.length) out.push({ text: text.slice(plain) });
  return out;
}
