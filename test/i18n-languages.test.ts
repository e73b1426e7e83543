import { describe, expect, it } from 'vitest';
import { LocaleSchema } from '../src/api/serializers/employees.serializer.js';
import { DEFAULT_WIDGET_SETTINGS, WIDGET_LANGUAGES } from '../src/domain/widget/widget.types.js';
import { en } from '../src/i18n/en.js';
import { LANGUAGES, LOCALES } from '../src/i18n/index.js';

/**
 * The server's languages (src/i18n): every language has every text of English, of the same kind,
 * and the allowed `locale` and widget `language` values come from the one registry. (That the agent
 * app has a catalogue of each is the compiler's check: web/app/src/i18n/index.ts `catalogues`.)
 */

/** Every leaf of a texts object as `path: kind`, calling functions with sample arguments. */
function leaves(value: unknown, path = ''): Array<[string, string, unknown]> {
  if (typeof value === 'function') {
    const sample = value.length === 1 ? value.call(null, SAMPLE) : value.call(null);
    return [[path, `function/${value.length}`, sample]];
  }
  if (Array.isArray(value)) return [[path, 'array', value]];
  if (typeof value === 'object' && value !== null) return Object.entries(value).flatMap(([k, v]) => leaves(v, path ? `${path}.${k}` : k));
  return [[path, typeof value, value]];
}
// One sample fits every text function: a string, a number and the invitation's facts at once.
const SAMPLE = Object.assign(new String('SAMPLE'), { inviter: 'INVITER', account: 'ACCOUNT', link: 'LINK', expires: 'EXPIRES' });

describe('server languages', () => {
  const english = leaves(en);

  for (const locale of LOCALES.filter((l) => l !== 'en')) {
    it(`${locale} has every text of en, of the same kind, none empty, placeholders used`, () => {
      const other = leaves(LANGUAGES[locale]);
      expect(other.map(([p, kind]) => `${p}: ${kind}`)).toEqual(english.map(([p, kind]) => `${p}: ${kind}`));
      for (const [path, , sample] of other) {
        const text = Array.isArray(sample) ? sample.join('\n') : String(sample);
        expect(text.trim(), path).not.toBe('');
        const original = english.find(([p]) => p === path)?.[2];
        const originalText = Array.isArray(original) ? original.join('\n') : String(original);
        // A value the English text shows (an account name, a link, a count) is shown in every language.
        for (const marker of ['SAMPLE', 'INVITER', 'ACCOUNT', 'LINK', 'EXPIRES'])
          if (originalText.includes(marker)) expect(text, `${path} shows ${marker}`).toContain(marker);
      }
    });
  }

  it('the check sees a missing text', () => {
    const { widget, ...rest } = LANGUAGES.ru;
    const { send: _send, ...withoutSend } = widget;
    expect(leaves({ ...rest, widget: withoutSend }).map(([p]) => p)).not.toEqual(english.map(([p]) => p));
  });

  it('the allowed employee locales and widget languages are the registry', () => {
    expect((LocaleSchema as unknown as { enum: string[] }).enum).toEqual(LOCALES);
    expect(WIDGET_LANGUAGES).toEqual(['auto', ...LOCALES]);
    expect(Object.keys(LANGUAGES)).toEqual(LOCALES);
  });

  it("the widget's defaults are the English texts of the registry", () => {
    expect(DEFAULT_WIDGET_SETTINGS.title).toBe(en.widget.title);
    expect(DEFAULT_WIDGET_SETTINGS.greeting).toBe(en.widget.greeting);
    expect(DEFAULT_WIDGET_SETTINGS.offlineMessage).toBe(en.widget.offlineMessage);
  });
});
