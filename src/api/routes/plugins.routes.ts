import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';

const PluginSummary = Type.Object({ id: Id, type: Type.String(), name: Type.String(), status: Type.String() });
const Metadata = Type.Object({}, { additionalProperties: true, maxProperties: 100 });

export const pluginsRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/plugins',
    ownerOnly: true,
    schema: {
      tags: ['plugins'],
      summary: 'List the plugins of the account (owner, signed in)',
      response: { 200: Type.Array(PluginSummary) },
    },
    handler: (_req, _reply, { services, auth }) => services.plugins.list(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/plugins',
    ownerOnly: true,
    schema: {
      tags: ['plugins'],
      summary: 'Register a plugin (owner, signed in); its pluginToken is shown once',
      description:
        'Exchange the pluginToken at POST /v1.3/auth/plugin for access tokens acting as an employee. `name` defaults to `type`. ' +
        'Plugin and API-key tokens cannot manage plugins (403).',
      body: Type.Object({
        type: Type.String({ minLength: 1, maxLength: 100 }),
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
        metadata: Type.Optional(Metadata),
      }),
      response: {
        200: Type.Object({
          id: Id,
          type: Type.String(),
          name: Type.String(),
          metadata: Type.Object({}, { additionalProperties: true }),
          status: Type.String(),
          pluginToken: Type.String(),
        }),
      },
    },
    handler: (req, _reply, { services, auth }) => services.plugins.create(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/plugins/:id',
    ownerOnly: true,
    schema: {
      tags: ['plugins'],
      summary: 'Delete a plugin (owner, signed in): its token and every access token it obtained stop working',
      params: IdParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.plugins.remove(auth, req.params.id);
      return {};
    },
  }),
];
