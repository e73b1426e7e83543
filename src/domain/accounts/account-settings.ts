import { Type, type Static, type TSchema } from 'typebox';
import type { Updateable } from 'kysely';
import type { Deps } from '../context.js';
import type { AccountRow, AccountsTable } from '../../db/schema.js';
import { invalid, notFound, type ErrorDetail } from '../errors.js';
import { isPhoneCountry } from '../customers/phone.js';
import { findAccount, updateAccountSettings } from './accounts.repo.js';

/**
 * The account's settings (docs/api/resources.md "Account settings"): one entry per setting, with its
 * schema, its column, and a check beyond the schema. `GET /v1.3/account/me/settings` answers all
 * of them, `PUT` takes any of them; the route's schemas are made from this table.
 */
interface Setting<S extends TSchema> {
  schema: S;
  read(account: AccountRow): Static<S>;
  write(value: Static<S>): Updateable<AccountsTable>;
  /** A message when the value is refused. */
  check?(value: Static<S>): string | undefined;
}

const setting = <S extends TSchema>(s: Setting<S>) => s;

export const ACCOUNT_SETTINGS = {
  typeNames: setting({
    schema: Type.Union([Type.Literal('api'), Type.Literal('hosted')], {
      description:
        "How answers to API keys and OAuth apps, and webhook payloads, name integration types: `api` (default) by their codes, `hosted` by the hosted service's names where it has one (`msgra` as `whatsapp`; docs/api/integrations.md)",
    }),
    read: (a) => (a.type_names === 'hosted' ? 'hosted' : 'api'),
    write: (value) => ({ type_names: value }),
  }),
  defaultCountry: setting({
    schema: Type.String({
      minLength: 2,
      maxLength: 2,
      description: 'ISO 3166 alpha-2 country a phone number without its country code is read in (docs/api/search.md "Phones")',
    }),
    read: (a) => a.default_country,
    write: (value) => ({ default_country: value }),
    check: (value) => (isPhoneCountry(value) ? undefined : 'must be an ISO 3166 alpha-2 country code, such as RU'),
  }),
};

type Settings = typeof ACCOUNT_SETTINGS;
export type AccountSettings = { [K in keyof Settings]: Static<Settings[K]['schema']> };

const entries = () => Object.entries(ACCOUNT_SETTINGS) as Array<[keyof Settings, Setting<TSchema>]>;

/** Every setting, as `GET` answers them. */
export const AccountSettingsSchema = Type.Object(Object.fromEntries(entries().map(([k, s]) => [k, s.schema])), {
  title: 'AccountSettings',
  additionalProperties: false,
});
/**
 * Any of the settings, as `PUT` takes them. An unknown key is refused by name (`propertyNames`):
 * with `additionalProperties: false` the API's validator would drop it silently (api/validation.ts).
 */
export const AccountSettingsPatchSchema = Type.Object(Object.fromEntries(entries().map(([k, s]) => [k, Type.Optional(s.schema)])), {
  propertyNames: { enum: Object.keys(ACCOUNT_SETTINGS) },
});

export function readSettings(account: AccountRow): AccountSettings {
  return Object.fromEntries(entries().map(([k, s]) => [k, s.read(account)])) as AccountSettings;
}

export class AccountSettingsService {
  constructor(private readonly deps: Deps) {}

  async get(accountId: number): Promise<AccountSettings> {
    const account = await findAccount(this.deps.db.kysely, accountId);
    if (!account) throw notFound('Account not found');
    return readSettings(account);
  }

  /** Changes the settings given; every refused value is reported at once and nothing changes. */
  async update(accountId: number, patch: Partial<AccountSettings>): Promise<AccountSettings> {
    const details: ErrorDetail[] = [];
    let values: Updateable<AccountsTable> = {};
    for (const [key, s] of entries()) {
      if (!(key in patch)) continue;
      const value = patch[key];
      const message = s.check?.(value);
      if (message) details.push({ path: `body.${key}`, message });
      else values = { ...values, ...s.write(value) };
    }
    if (details.length) throw invalid(`Invalid request: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details);
    if (Object.keys(values).length) await updateAccountSettings(this.deps.db.kysely, accountId, values);
    return this.get(accountId);
  }
}

/** The account's `defaultCountry` (phone numbers without a country code). */
export async function defaultCountryOf(deps: Deps, accountId: number): Promise<string> {
  return (await findAccount(deps.db.kysely, accountId))?.default_country ?? 'RU';
}
