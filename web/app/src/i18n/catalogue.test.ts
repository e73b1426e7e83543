import { afterEach, describe, expect, it } from 'vitest';
import { IntlMessageFormat } from 'intl-messageformat';
import { catalogues, formatAmount, formatRelative, formatTime, LOCALES, pickLocale, setCurrency, setLocale, t } from './index';
import { en } from './en';

type Element = { type: number; value?: string; options?: Record<string, { value: Element[] }> };

/** The argument names of an ICU message, with the kind of each (`count:plural`, `name:argument`). */
function placeholders(text: string, locale: string): string[] {
  const names = new Set<string>();
  const walk = (elements: Element[]) => {
    for (const e of elements) {
      // 1 argument, 2 number, 3 date, 4 time, 5 select, 6 plural (intl-messageformat's TYPE)
      if (e.type >= 1 && e.type <= 6 && e.value) names.add(`${e.value}:${e.type === 6 || e.type === 2 ? 'number' : 'text'}`);
      for (const option of Object.values(e.options ?? {})) walk(option.value);
    }
  };
  walk(new IntlMessageFormat(text, locale, undefined, { ignoreTag: true }).getAst() as Element[]);
  return [...names].sort();
}

afterEach(() => setLocale('en'));

describe('catalogues', () => {
  for (const locale of LOCALES.filter((l) => l !== 'en')) {
    it(`${locale} has every key of en with the same placeholders`, () => {
      const other: Record<string, string> = catalogues[locale];
      expect(Object.keys(other).sort()).toEqual(Object.keys(en).sort());
      for (const key of Object.keys(en) as Array<keyof typeof en>) {
        expect(other[key], key).toBeTypeOf('string');
        expect(other[key].trim(), key).not.toBe('');
        expect(placeholders(other[key], locale), key).toEqual(placeholders(en[key], 'en'));
      }
    });
  }

  it('the placeholder check sees a missing or renamed placeholder', () => {
    expect(placeholders('Delete {name}?', 'en')).not.toEqual(placeholders('Удалить?', 'ru'));
    expect(placeholders('{count} selected', 'en')).not.toEqual(placeholders('Выбрано: {n}', 'ru'));
  });

  it('Russian plurals take one, few and many', () => {
    setLocale('ru');
    const leads = [0, 1, 2, 5, 11, 21, 22, 25].map((count) => t('bulk.allDone', { count }));
    expect(leads).toEqual([
      'Готово: 0 лидов',
      'Готово: 1 лид',
      'Готово: 2 лида',
      'Готово: 5 лидов',
      'Готово: 11 лидов',
      'Готово: 21 лид',
      'Готово: 22 лида',
      'Готово: 25 лидов',
    ]);
    expect(t('webhooks.attempts', { count: 3 })).toBe('3 попытки');
    setLocale('en');
    expect([1, 2].map((count) => t('bulk.allDone', { count }))).toEqual(['Done: 1 lead', 'Done: 2 leads']);
  });

  it('switching the language changes every text at once', () => {
    expect(t('nav.inbox')).toBe('Inbox');
    setLocale('ru');
    expect(t('nav.inbox')).toBe('Входящие');
    expect(t('app.confirmDelete', { name: 'VIP' })).toBe('Удалить «VIP»?');
  });

  it('picks the stored choice, else the browser, else English', () => {
    expect(pickLocale('en', ['ru-RU', 'ru'])).toBe('en');
    expect(pickLocale(null, ['de-DE', 'ru-RU'])).toBe('ru');
    expect(pickLocale('xx', ['de'])).toBe('en');
  });

  it('formats times on a 24-hour clock and amounts in the account currency in Russian', () => {
    const at = new Date(2026, 2, 5, 15, 7).getTime();
    setLocale('ru');
    expect(formatTime(at, new Date(at))).toBe('15:07');
    setCurrency('RUB');
    expect(formatAmount(1500).replace(/\s/g, ' ')).toBe('1 500 ₽');
    setLocale('en');
    expect(formatTime(at, new Date(at))).toMatch(/03:07\sPM/);
    setCurrency('USD');
    expect(formatAmount(1500)).toBe('$1,500');
  });

  it('formats relative times in the language', () => {
    const now = Date.UTC(2026, 2, 5, 12);
    setLocale('ru');
    expect([5 * 60_000, 2 * 3600_000, 86_400_000].map((ago) => formatRelative(now - ago, now))).toEqual([
      '5 минут назад',
      '2 часа назад',
      'вчера',
    ]);
    setLocale('en');
    expect(formatRelative(now - 5 * 60_000, now)).toBe('5 minutes ago');
  });
});
