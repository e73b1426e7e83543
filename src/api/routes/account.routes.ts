import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { serializeMe, serializeTariff } from '../serializers/account.serializer.js';
import { ChosenLocale } from '../serializers/employees.serializer.js';
import type { Services } from '../../services.js';
import type { AuthContext } from '../../domain/auth/auth-context.js';

const MeUser = {
  id: Type.Integer(),
  login: Type.String(),
  name: Type.String(),
  role: Type.String(),
  metadata: Type.Object({}, { additionalProperties: true }),
};
const MeAccount = Type.Object({ id: Type.Integer(), status: Type.Union([Type.Literal('active'), Type.Literal('expired')]) });
const Me = Type.Object({ account: MeAccount, user: Type.Optional(Type.Object(MeUser)) }, { title: 'MeV12' });
const MeV13 = Type.Object(
  {
    account: MeAccount,
    user: Type.Optional(
      Type.Object({
        ...MeUser,
        locale: ChosenLocale('the chosen language (Parley extension); null until chosen, when the app follows the browser'),
      }),
    ),
  },
  { title: 'Me' },
);

const Tariff = Type.Object({
  trial: Type.Boolean(),
  expiration: Type.String({ format: 'date-time' }),
  value: Type.String(),
  currency: Type.String(),
  period: Type.Integer(),
  subscription: Type.Boolean(),
  packages: Type.Array(Type.Object({ packageId: Type.Integer(), count: Type.Integer(), name: Type.String() })),
  price: Type.Integer(),
});

const ApiKey = Type.Object({ id: Id, name: Type.String(), createdAt: Type.Integer() });

async function me(services: Services, auth: AuthContext, withLocale: boolean) {
  return serializeMe(auth, await services.accounts.status(auth.accountId), withLocale);
}

const meSummary = 'The account, and the user when the token acts as one';

export const accountRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me',
    schema: { tags: ['account'], summary: meSummary, response: { 200: MeV13 } },
    handler: (_req, _reply, { services, auth }) => me(services, auth, true),
  }),
  defineRoute({
    versions: ['v1.1', 'v1.2'],
    method: 'GET',
    url: '/me',
    schema: { tags: ['account'], summary: meSummary, response: { 200: Me } },
    handler: (_req, _reply, { services, auth }) => me(services, auth, false),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/tariff',
    schema: { tags: ['account'], summary: 'The account plan', response: { 200: Tariff } },
    handler: async (_req, _reply, { services, auth }) => serializeTariff(await services.accounts.plan(auth.accountId)),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/account/me/api-keys',
    ownerOnly: true,
    schema: {
      tags: ['account'],
      summary: 'Create a long-lived API key (the token is shown once)',
      body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }),
      response: { 200: Type.Object({ id: Id, name: Type.String(), token: Type.String() }) },
    },
    handler: (req, _reply, { services, auth }) => services.auth.createApiKey(auth, req.body.name),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/api-keys',
    ownerOnly: true,
    schema: { tags: ['account'], summary: 'List API keys (without tokens)', response: { 200: Type.Array(ApiKey) } },
    handler: (_req, _reply, { services, auth }) => services.auth.listApiKeys(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/account/me/api-keys/:id',
    ownerOnly: true,
    schema: { tags: ['account'], summary: 'Revoke an API key', params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.auth.revokeApiKey(auth, req.params.id);
      return {};
    },
  }),
];
