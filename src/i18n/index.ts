import { en } from './en.js';
import { ru } from './ru.js';
import type { LanguageTexts } from './texts.js';

/**
 * Every language Parley speaks, in one place: the allowed `locale` of an employee and `language` of
 * a widget derive from it. Adding a language: its file beside en.ts (the compiler asks for every
 * text of texts.ts), one line here, and its catalogue in the agent app (README "Русский интерфейс").
 */
export const LANGUAGES = { en, ru } satisfies Record<string, LanguageTexts>;

export type Locale = keyof typeof LANGUAGES;
export const LOCALES = Object.keys(LANGUAGES) as Locale[];

/** The texts of a language. */
export function textsOf(locale: Locale): LanguageTexts {
  return LANGUAGES[locale];
}
