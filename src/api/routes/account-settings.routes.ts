import { defineRoute, V13 } from '../route.js';
import {
  AccountSettingsChange,
  AccountSettingsSchema,
  readAccountSettings,
  updateAccountSettings,
} from '../../domain/accounts/account-settings.js';

/** `GET/PUT /v1.3/account/me/settings` (docs/api/integrations.md "Account settings"). */
export const accountSettingsRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/settings',
    schema: { tags: ['account'], summary: "The account's settings", response: { 200: AccountSettingsSchema } },
    handler: (_req, _reply, { services, auth }) => readAccountSettings(services.deps.db.kysely, auth.accountId),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/account/me/settings',
    ownerOnly: true,
    schema: {
      tags: ['account'],
      summary: 'Changes the given settings (owner); answers them all. An unknown setting or value is 400',
      body: AccountSettingsChange,
      response: { 200: AccountSettingsSchema },
    },
    handler: (req, _reply, { services, auth }) => updateAccountSettings(services.deps.db.kysely, auth.accountId, req.body),
  }),
];
