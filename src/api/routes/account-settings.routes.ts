import { defineRoute, V13 } from '../route.js';
import { AccountSettingsPatchSchema, AccountSettingsSchema } from '../../domain/accounts/account-settings.js';

/** `GET/PUT /v1.3/account/me/settings` (docs/api/resources.md "Account settings"); the fields are domain/accounts/account-settings.ts's table. */
export const accountSettingsRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/settings',
    schema: { tags: ['account'], summary: "The account's settings", response: { 200: AccountSettingsSchema } },
    handler: (_req, _reply, { services, auth }) => services.accountSettings.get(auth.accountId),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/account/me/settings',
    ownerOnly: true,
    schema: {
      tags: ['account'],
      summary: 'Change some of the account settings (owner only); answers all of them',
      body: AccountSettingsPatchSchema,
      response: { 200: AccountSettingsSchema },
    },
    handler: (req, _reply, { services, auth }) => services.accountSettings.update(auth.accountId, req.body),
  }),
];
