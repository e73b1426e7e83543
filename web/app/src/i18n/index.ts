import { en, type MessageKey } from './en';

const catalogue: Record<MessageKey, string> = en;

/** A string of the catalogue with `{name}` placeholders filled. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = catalogue[key] ?? key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (_, name: string) => (name in vars ? String(vars[name]) : `{${name}}`));
}

export function formatTime(ms: number): string {
  const d = new Date(ms);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return d.toLocaleTimeString('en', { hour: '2-digit', minute: '2-digit' });
  return d.toLocaleDateString('en', { day: 'numeric', month: 'short' });
}

export function formatDay(ms: number): string {
  return new Date(ms).toLocaleDateString('en', { weekday: 'short', day: 'numeric', month: 'long', year: 'numeric' });
}
