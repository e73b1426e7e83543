/** An employee as mentions see it: its id, name (null until an invitation is accepted) and login. */
export interface Mentionable {
  id: number;
  name: string | null;
  login: string;
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;

/**
 * The employees a note's text mentions, in order of first mention, without repeats. A mention is
 * `@` (at the start or after a character that is not a letter, digit or underscore) followed by an
 * employee's name or login, compared without case and ended by the text's end or a character that
 * is not a letter, digit or underscore. When several names fit (`@Ann` and `@Ann Lee`), the longest
 * wins, so a full name is never mistaken for a shorter colleague's.
 */
export function resolveMentions(text: string, employees: readonly Mentionable[]): number[] {
  const candidates = employees
    .flatMap((e) =>
      [e.name, e.login].filter((n): n is string => !!n && n.trim() !== '').map((n) => ({ id: e.id, key: n.trim().toLocaleLowerCase() })),
    )
    .sort((a, b) => b.key.length - a.key.length);
  const lower = text.toLocaleLowerCase();
  // Lower-casing may change lengths in a few scripts; matching on the lowered text keeps indexes consistent.
  const out: number[] = [];
  for (let at = lower.indexOf('@'); at !== -1; at = lower.indexOf('@', at + 1)) {
    if (at > 0 && WORD_CHAR.test(lower[at - 1])) continue;
    const rest = lower.slice(at + 1);
    const hit = candidates.find((c) => rest.startsWith(c.key) && !WORD_CHAR.test(rest.charAt(c.key.length)));
    if (hit && !out.includes(hit.id)) out.push(hit.id);
  }
  return out;
}
