import type { TemplateGroup, TemplatePhrase } from '../api/types';

export interface KeyLike {
  key: string;
  ctrlKey: boolean;
  altKey: boolean;
  shiftKey: boolean;
  metaKey: boolean;
  code?: string;
}

const MODS = ['ctrl', 'alt', 'shift', 'meta'] as const;

/**
 * A template hotkey in canonical form: "ctrl+alt+shift+meta+<key>", lower case. A hotkey written
 * without a modifier ("1", "g") means Alt+<key>, so plain typing never fires a template.
 */
export function normalizeHotkey(hotkey: string): string | null {
  const parts = hotkey
    .toLowerCase()
    .split('+')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => (p === 'control' ? 'ctrl' : p === 'option' ? 'alt' : p === 'cmd' || p === 'command' ? 'meta' : p));
  const key = parts.filter((p) => !(MODS as readonly string[]).includes(p));
  if (key.length !== 1) return null;
  const mods = MODS.filter((m) => parts.includes(m));
  if (!mods.length) mods.push('alt');
  return [...mods, key[0]].join('+');
}

/** The canonical combination of a key event (the digit or letter from `code` when Alt changed `key`). */
export function eventCombo(e: KeyLike): string {
  let key = e.key.toLowerCase();
  if (e.code && /^(Digit|Key)[0-9A-Z]$/.test(e.code)) key = e.code.slice(-1).toLowerCase();
  const mods = MODS.filter((m) => (m === 'ctrl' ? e.ctrlKey : m === 'alt' ? e.altKey : m === 'shift' ? e.shiftKey : e.metaKey));
  return [...mods, key].join('+');
}

/** Phrases the employee may use: common ones and its own. */
export function usablePhrases(groups: TemplateGroup[], userId: number | null): Array<TemplatePhrase & { group: string }> {
  return groups.flatMap((g) => g.templates.filter((t) => t.userId === null || t.userId === userId).map((t) => ({ ...t, group: g.key })));
}

/** The phrase bound to the pressed combination, if any. */
export function phraseForKey(phrases: TemplatePhrase[], e: KeyLike): TemplatePhrase | undefined {
  if (!e.ctrlKey && !e.altKey && !e.metaKey) return undefined;
  const combo = eventCombo(e);
  return phrases.find((p) => p.hotkey && normalizeHotkey(p.hotkey) === combo);
}

/** The `/` search: the composer holds "/word" (nothing else) -> "word"; otherwise null. */
export function slashQuery(text: string): string | null {
  const m = /^\/(\S*)$/.exec(text);
  return m ? m[1] : null;
}

/** Phrases matching a search, best first: group name or hotkey prefix, then text containing it. */
export function searchPhrases<T extends TemplatePhrase & { group: string }>(phrases: T[], q: string, max = 8): T[] {
  const needle = q.toLowerCase();
  if (!needle) return phrases.slice(0, max);
  const scored = phrases
    .map((p) => {
      const group = p.group.toLowerCase();
      const text = p.template.toLowerCase();
      const score =
        group.startsWith(needle) || (p.hotkey ?? '').toLowerCase() === needle
          ? 0
          : text.startsWith(needle)
            ? 1
            : text.includes(needle) || group.includes(needle)
              ? 2
              : 3;
      return { p, score };
    })
    .filter((x) => x.score < 3);
  scored.sort((a, b) => a.score - b.score);
  return scored.slice(0, max).map((x) => x.p);
}
