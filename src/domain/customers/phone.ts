import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/min';

/** The country a number without its country code is read in when an account has none set. */
export const DEFAULT_COUNTRY = 'RU';

/** A phone as Parley stores it (docs/api/search.md "Phones"). */
export interface StoredPhone {
  /** E.164 (`+79161234567`) when the number parses, else the text as typed (trimmed). */
  phone: string;
  /** The text as it was typed or received. */
  asTyped: string;
  /** Whether `phone` is E.164; false: kept as typed. */
  parsed: boolean;
}

/** Whether `code` is an ISO 3166 alpha-2 code libphonenumber-js knows (the `defaultCountry` setting). */
export function isPhoneCountry(code: string): code is CountryCode {
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code);
}

/**
 * `text` as an E.164 number, reading a number without its country code in `country`: "8 (916)
 * 123-45-67", "+7 916 123-45-67", "79161234567" and "9161234567" are all `+79161234567` in RU. A
 * number libphonenumber-js (its minimal metadata) does not find valid is kept as typed.
 */
export function normalizePhone(text: string, country: string): StoredPhone {
  const asTyped = text.trim();
  const parsed = parsePhoneNumberFromString(asTyped, isPhoneCountry(country) ? country : DEFAULT_COUNTRY);
  if (parsed?.isValid()) return { phone: parsed.number, asTyped, parsed: true };
  return { phone: asTyped, asTyped, parsed: false };
}

/** The digits of an E.164 form of `text`, or undefined when it is not a phone number. */
export function phoneDigits(text: string, country: string): string | undefined {
  if (!/^[\s+()\-.0-9]+$/.test(text)) return undefined;
  const p = normalizePhone(text, country);
  return p.parsed ? p.phone.slice(1) : undefined;
}
