import { Type, type Static, type TSchema } from 'typebox';
import type { Executor } from '../../db/database.js';
import type { AccountsTable } from '../../db/schema.js';

/** One setting: its API schema, its column on `accounts`, and how a stored value reads. */
interface SettingField<S extends TSchema> {
  schema: S;
  column: keyof AccountsTable & string;
  read(stored: unknown): Static<S>;
}

const field = <S extends TSchema>(f: SettingField<S>) => f;

/**
 * The account's settings (`GET/PUT /v1.3/account/me/settings`, docs/api/integrations.md): one entry
 * per setting; the routes, the validation and the storage follow from it.
 */
export const ACCOUNT_SETTINGS = {
  typeNames: field({
    schema: Type.Union([Type.Literal('api'), Type.Literal('hosted')], {
      description:
        "How answers to API keys and OAuth apps, and webhook payloads, name integration types: `api` (default) by their codes, `hosted` by the hosted service's names where it has one (`msgra` as `whatsapp`)",
    }),
    column: 'type_names',
    read: (stored) => (stored === 'hosted' ? 'hosted' : 'api'),
  }),
};

type Fields = typeof ACCOUNT_SETTINGS;
export type AccountSettings = { [K in keyof Fields]: Static<Fields[K]['schema']> };

const keys = Object.keys(ACCOUNT_SETTINGS) as Array<keyof Fields>;

const properties = Object.fromEntries(keys.map((k) => [k, ACCOUNT_SETTINGS[k].schema])) as { [K in keyof Fields]: Fields[K]['schema'] };

/** The whole settings object (answers). */
export const AccountSettingsSchema = Type.Object(properties, { title: 'AccountSettings' });

/**
 * A change: any of the settings, and no other key. An unknown key fails its own path (a schema
 * that nothing matches) rather than being dropped, as `additionalProperties: false` would be by
 * the validator's removeAdditional (api/validation.ts).
 */
export const AccountSettingsChange = Type.Partial(Type.Object(properties), {
  additionalProperties: Type.Never({ description: 'not a setting' }),
});

export async function readAccountSettings(db: Executor, accountId: number): Promise<AccountSettings> {
  const row = (await db
    .selectFrom('accounts')
    .select(keys.map((k) => ACCOUNT_SETTINGS[k].column))
    .where('id', '=', accountId)
    .executeTakeFirstOrThrow()) as Record<string, unknown>;
  return Object.fromEntries(keys.map((k) => [k, ACCOUNT_SETTINGS[k].read(row[ACCOUNT_SETTINGS[k].column])])) as AccountSettings;
}

/** Stores the given settings (already validated against AccountSettingsChange) and answers them all. */
export async function updateAccountSettings(db: Executor, accountId: number, change: Partial<AccountSettings>): Promise<AccountSettings> {
  const set = Object.fromEntries(keys.filter((k) => change[k] !== undefined).map((k) => [ACCOUNT_SETTINGS[k].column, change[k]]));
  if (Object.keys(set).length) await db.updateTable('accounts').set(set).where('id', '=', accountId).execute();
  return readAccountSettings(db, accountId);
}
