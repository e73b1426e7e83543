import { IntlMessageFormat } from 'intl-messageformat';
import { en, type MessageKey } from './en';
import { ru } from './ru';
import type { Locale as ServerLocale } from '../../../../src/i18n/index';

/**
 * Every language of the app: adding one is its catalogue file and one line here. The languages are
 * the server's (src/i18n/index.ts, where the allowed `locale` values come from): the compiler asks
 * for a catalogue of each.
 */
export const catalogues: Record<ServerLocale, Record<MessageKey, string>> = { en, ru };
export type Locale = keyof typeof catalogues;
export const LOCALES = Object.keys(catalogues) as Locale[];
export type { MessageKey };

const STORE_KEY = 'parley.locale';
/** Set when the language was picked on a sign-in screen, before an employee existed to keep it. */
const PICKED_KEY = 'parley.locale.picked';
const listeners = new Set<() => void>();
const compiled = new Map<string, IntlMessageFormat>();
let current: Locale = 'en';
let currency = 'USD';
/** Bumped on every change of language or currency: what subscribers re-render on. */
let version = 0;

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as string[]).includes(value);
}

/** The employee's stored choice, else the first of the browser's languages the app speaks, else English. */
export function pickLocale(stored: string | null | undefined, browser: readonly string[]): Locale {
  if (isLocale(stored)) return stored;
  for (const tag of browser) {
    const primary = tag.toLowerCase().split('-')[0];
    if (isLocale(primary)) return primary;
  }
  return 'en';
}

function remembered(): string | null {
  try {
    return localStorage.getItem(STORE_KEY);
  } catch {
    return null;
  }
}

/** The language before the server has said: the last one chosen in this browser, else the browser's. */
export function initialLocale(): Locale {
  return pickLocale(remembered(), typeof navigator === 'undefined' ? [] : (navigator.languages ?? [navigator.language]));
}

/** Remembers a language picked before sign-in, to be stored as the employee's own at sign-in or sign-up. */
export function rememberPick(locale: Locale): void {
  try {
    localStorage.setItem(PICKED_KEY, locale);
  } catch {
    // private mode: the choice applies to this page only
  }
}

/** The language picked on a sign-in screen and not yet stored on the employee, if any. */
export function pendingPick(): Locale | null {
  let value: string | null = null;
  try {
    value = localStorage.getItem(PICKED_KEY);
  } catch {
    return null;
  }
  return isLocale(value) ? value : null;
}

export function forgetPick(): void {
  try {
    localStorage.removeItem(PICKED_KEY);
  } catch {
    // nothing was kept
  }
}

export function getLocale(): Locale {
  return current;
}

/** A snapshot that changes with the language and the currency (for useSyncExternalStore). */
export function getFormatVersion(): number {
  return version;
}

function changed(): void {
  version++;
  for (const fn of listeners) fn();
}

export function onLocaleChange(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** Switches the whole app at once: subscribers (the app root) re-render with the new catalogue. */
export function setLocale(locale: Locale): void {
  try {
    localStorage.setItem(STORE_KEY, locale);
  } catch {
    // private mode: the choice still applies to this page
  }
  if (typeof document !== 'undefined') document.documentElement.lang = locale;
  if (locale === current) return;
  current = locale;
  changed();
}

/** The account's currency for amounts (from its plan). */
export function setCurrency(code: string | null | undefined): void {
  if (!code || !/^[A-Za-z]{3}$/.test(code) || code.toUpperCase() === currency) return;
  currency = code.toUpperCase();
  changed();
}

/** A catalogue string in the current language, ICU placeholders and plurals filled. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = catalogues[current][key] ?? en[key] ?? key;
  if (!vars && !text.includes('{')) return text;
  const id = `${current}\u0000${key}`;
  let format = compiled.get(id);
  if (!format) {
    format = new IntlMessageFormat(text, current, undefined, { ignoreTag: true });
    compiled.set(id, format);
  }
  return String(format.format(vars ?? {}));
}

// English dates in the day-month order; every other language by its own code (24-hour where it is usual).
const tag = () => (current === 'en' ? 'en-GB' : current);
const clockTag = () => (current === 'en' ? 'en-US' : current);

/** A message's time today, its date otherwise; 24-hour clock in Russian. */
export function formatTime(ms: number, now = new Date()): string {
  const d = new Date(ms);
  if (d.toDateString() === now.toDateString()) return new Intl.DateTimeFormat(clockTag(), { hour: '2-digit', minute: '2-digit' }).format(d);
  return new Intl.DateTimeFormat(tag(), { day: 'numeric', month: 'short' }).format(d);
}

export function formatDay(ms: number): string {
  return new Intl.DateTimeFormat(tag(), { weekday: 'short', day: 'numeric', month: 'long', year: 'numeric' }).format(new Date(ms));
}

export function formatDate(at: number | string): string {
  return new Intl.DateTimeFormat(tag(), { dateStyle: 'long' }).format(new Date(at));
}

export function formatDateTime(at: number | string): string {
  return new Intl.DateTimeFormat(clockTag(), { dateStyle: 'medium', timeStyle: 'short' }).format(new Date(at));
}

/** "5 minutes ago", "через 2 часа": the nearest whole unit. */
export function formatRelative(ms: number, now = Date.now()): string {
  const seconds = Math.round((ms - now) / 1000);
  const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ];
  const rtf = new Intl.RelativeTimeFormat(current, { numeric: 'auto' });
  for (const [unit, size] of units) if (Math.abs(seconds) >= size) return rtf.format(Math.round(seconds / size), unit);
  return rtf.format(seconds, 'second');
}

export function formatNumber(n: number): string {
  return new Intl.NumberFormat(current).format(n);
}

/** An amount in the account's currency, without kopecks or cents when it is whole. */
export function formatAmount(n: number | bigint): string {
  const whole = typeof n === 'bigint' || Number.isInteger(n);
  return new Intl.NumberFormat(current, { style: 'currency', currency, maximumFractionDigits: whole ? 0 : 2 }).format(n);
}
