import { LANGUAGES } from '../../src/i18n/index.js';
import type { WidgetTexts } from '../../src/i18n/texts.js';

/**
 * Every text the widget writes itself comes from the server's language files (src/i18n/<lang>.ts,
 * `widget`), so a language added there speaks in the widget too. The owner's title, greeting and
 * offline message stay as the owner wrote them; while one is still Parley's default (`defaultTexts`),
 * the widget shows the default of its own language.
 */
export type { WidgetTexts };

const TEXTS: Record<string, WidgetTexts> = Object.fromEntries(Object.entries(LANGUAGES).map(([code, texts]) => [code, texts.widget]));

/** The widget's language: the setting when fixed, else the first of the browser's it speaks, else English. */
export function widgetLanguage(setting: string | undefined, browser: readonly string[]): string {
  if (setting && setting !== 'auto' && TEXTS[setting]) return setting;
  for (const tag of browser) {
    const primary = tag.toLowerCase().split('-')[0];
    if (TEXTS[primary]) return primary;
  }
  return 'en';
}

export function textsFor(language: string): WidgetTexts {
  return TEXTS[language] ?? LANGUAGES.en.widget;
}
