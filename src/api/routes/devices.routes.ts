import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { loadOrCreateVapidKeys } from '../../push/vapid.js';

const tags = ['devices'];
const Name = Type.Optional(Type.String({ minLength: 1, maxLength: 100 }));
const B64url = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+={0,2}$' });

const Device = Type.Object({
  id: Id,
  platform: Type.Union([Type.Literal('web'), Type.Literal('fcm')]),
  name: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.Integer({ description: 'Unix milliseconds' }),
});

const PushSettings = Type.Object({ previews: Type.Boolean({ description: 'Notifications show the first 100 characters of the message' }) });

/** Push devices of the signed-in employee (docs/api/push.md). */
export const devicesRoutes = [
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/devices',
    schema: {
      tags,
      summary: 'Register a device of the signed-in employee for push notifications (Web Push subscription or FCM token)',
      description:
        'Registering the same endpoint or token again updates it (same id). `web` takes `subscription` (PushSubscription.toJSON()), `fcm` takes `token`.',
      body: Type.Object({
        platform: Type.Union([Type.Literal('web'), Type.Literal('fcm')]),
        subscription: Type.Optional(
          Type.Object({
            endpoint: Type.String({ minLength: 1, maxLength: 2000 }),
            expirationTime: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
            keys: Type.Object({ p256dh: B64url(100), auth: B64url(40) }),
          }),
        ),
        token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7E]+$' })),
        name: Name,
      }),
      response: { 200: Device },
    },
    handler: (req, _reply, { services, auth }) => services.devices.register(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/devices',
    schema: { tags, summary: "The signed-in employee's devices", response: { 200: Type.Array(Device) } },
    handler: (_req, _reply, { services, auth }) => services.devices.list(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/devices/:id',
    schema: { tags, summary: "Remove one of the signed-in employee's devices", params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.devices.remove(auth, req.params.id);
      return {};
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/devices/vapid-key',
    schema: {
      tags,
      summary: 'The VAPID public key a browser subscribes with (PushManager.subscribe applicationServerKey)',
      response: { 200: Type.Object({ publicKey: Type.String() }) },
    },
    handler: async (_req, _reply, { services }) => ({ publicKey: loadOrCreateVapidKeys(services.deps.config).publicKey }),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/devices/settings',
    schema: { tags, summary: "The account's push settings", response: { 200: PushSettings } },
    handler: (_req, _reply, { services, auth }) => services.devices.settings(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/devices/settings',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Change the account's push settings (owner): previews off shows only the customer's name",
      body: PushSettings,
      response: { 200: PushSettings },
    },
    handler: (req, _reply, { services, auth }) => services.devices.setSettings(auth, req.body),
  }),
];
