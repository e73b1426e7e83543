import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, IdParams } from '../schemas/common.js';
import { publicBase } from '../serializers/widget.serializer.js';
import { connectorCommand } from '../../domain/bridge/bridge-types.js';

/** What the owner needs to start a bridge: the token (shown once), where to connect, the command. */
export const BridgeConnectInfo = Type.Object(
  {
    token: Type.String({ description: 'The bridge token: shown once; rotate it with POST /v1.3/integrations/<id>/bridge/token' }),
    url: Type.String({ description: 'The WebSocket path a bridge connects to' }),
    command: Type.Union([Type.String(), Type.Null()], {
      description: 'The shipped connector command for this type, or null (bring your own bridge)',
    }),
  },
  { title: 'BridgeConnectInfo', description: 'Account bridge (docs/channels/bridge.md)' },
);

const Prompt = Type.Object({
  kind: Type.String({ description: '`qr`, `phone`, `code` or `password`' }),
  data: Type.Optional(Type.String({ description: 'qr: the text to render as a QR code' })),
  expiresAt: Type.Optional(Type.Integer({ description: 'qr: Unix ms' })),
  expired: Type.Boolean({ description: 'qr: past expiresAt (the bridge sends a new one)' }),
  hint: Type.Optional(Type.String()),
  error: Type.Optional(Type.String({ description: 'Why the previous answer was not taken' })),
});

const BridgeState = Type.Object(
  {
    protocol: Type.Integer(),
    status: Type.String({ description: 'The integration status: `connecting`, `active` or `auth failure`' }),
    online: Type.Boolean({ description: 'A bridge is connected (to any Parley process)' }),
    prompt: Type.Union([Prompt, Type.Null()], { description: 'What the bridge waits for from the owner, or null' }),
  },
  { title: 'BridgeState', description: "An account bridge's state and login prompt" },
);

const LoginBody = Type.Object(
  {
    kind: Type.Union([Type.Literal('phone'), Type.Literal('code'), Type.Literal('password'), Type.Literal('qr')]),
    value: Type.String({ maxLength: 500, description: 'What the owner typed; for `qr`, empty: ask the bridge for a new QR code' }),
  },
  { additionalProperties: false },
);

const tags = ['integrations'];

export const bridgeInfo = (base: string, integrationId: number, type: string, token: string) => ({
  token,
  url: `${base.replace(/^http/, 'ws')}/channels/bridge/${integrationId}`,
  command: connectorCommand(type, base, integrationId, token) ?? null,
});

/** The owner's side of an account bridge (docs/api/integrations.md "Account bridge"). */
export const bridgeAdminRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/integrations/:id/bridge',
    schema: {
      tags,
      summary: "An account bridge's state and login prompt (poll while connecting)",
      params: IdParams,
      response: { 200: BridgeState },
    },
    handler: async (req, _reply, { services, auth }) => services.bridge.view(auth, req.params.id),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/integrations/:id/bridge/token',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Rotate the bridge token (the connected bridge is disconnected)',
      params: IdParams,
      body: Type.Optional(Empty),
      response: { 200: BridgeConnectInfo },
    },
    handler: async (req, _reply, { services, auth }) => {
      const token = await services.bridge.rotateToken(auth, req.params.id);
      const row = await services.integrations.get(auth, req.params.id);
      return bridgeInfo(publicBase(services.deps.config, req), row.id, row.type, token);
    },
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/integrations/:id/bridge/login',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Answer the bridge's login prompt (phone, code, 2FA password; or ask for a new QR)",
      description: 'Waits for the bridge: taken 200; refused 422 with the reason; no bridge 502 `channel_offline`; no answer 504.',
      params: IdParams,
      body: LoginBody,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.bridge.answerLogin(auth, req.params.id, req.body);
      return {};
    },
  }),
];
