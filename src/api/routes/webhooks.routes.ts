import { Type } from 'typebox';
import { ALL, defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { EVENT_TYPES } from '../../events/event-types.js';
import { OPT_IN_EVENT_TYPES } from '../../events/fan-out.js';
import { DELIVERY_LIST_DEFAULT, DELIVERY_LIST_MAX, URL_MAX_LENGTH } from '../../domain/webhooks/webhooks.types.js';
import { DeliverySchema, serializeDelivery, serializeWebhook, WebhookRecordSchema } from '../serializers/webhooks.serializer.js';

const Url = Type.String({ minLength: 1, maxLength: URL_MAX_LENGTH, description: 'http(s) address that receives events' });
const Name = Type.String({ maxLength: 200 });
const Events = Type.Union([Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 }), Type.Null()], {
  description: `Event types to receive (null or absent: all but ${[...OPT_IN_EVENT_TYPES].join(', ')}, which are sent only when listed): ${EVENT_TYPES.join(', ')}`,
});
const TAGS = ['webhooks'];

export const webhooksRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/webhooks',
    ownerOnly: true,
    schema: { tags: TAGS, summary: 'List the webhooks of the account (owner)', response: { 200: Type.Array(WebhookRecordSchema) } },
    handler: async (_req, _reply, { services, auth }) => (await services.webhooks.list(auth)).map(serializeWebhook),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/webhooks',
    ownerOnly: true,
    schema: {
      tags: TAGS,
      summary: 'Register a webhook (owner)',
      description:
        'At most 10 per account (1 through v1.1): more -> 409 limit_reached. A url already registered -> 409 ' +
        '"This server already exists". Loopback, private, link-local and metadata addresses are refused (400). ' +
        'Deliveries are signed per Standard Webhooks with `secret`; the payload shape follows the version it was registered through.',
      body: Type.Object({ url: Url, name: Type.Optional(Name), events: Type.Optional(Events) }),
      response: { 200: WebhookRecordSchema },
    },
    handler: async (req, _reply, { services, auth, version, traits }) =>
      serializeWebhook(await services.webhooks.create(auth, req.body, { version, webhookLimit: traits.webhookLimit })),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/webhooks/:id',
    ownerOnly: true,
    schema: {
      tags: TAGS,
      summary: 'Change a webhook (owner): url, name, status (1 active, 0 disabled), events',
      params: IdParams,
      body: Type.Object({
        url: Type.Optional(Url),
        name: Type.Optional(Name),
        status: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)])),
        events: Type.Optional(Events),
      }),
      response: { 200: WebhookRecordSchema },
    },
    handler: async (req, _reply, { services, auth }) => serializeWebhook(await services.webhooks.update(auth, req.params.id, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/webhooks/:id',
    ownerOnly: true,
    schema: { tags: TAGS, summary: 'Delete a webhook and its delivery log (owner)', params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.webhooks.remove(auth, req.params.id);
      return {};
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/webhooks/:id/deliveries',
    ownerOnly: true,
    schema: {
      tags: TAGS,
      summary: 'Recent deliveries of a webhook, newest first, with every attempt (owner)',
      params: IdParams,
      querystring: Type.Object({
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DELIVERY_LIST_MAX, default: DELIVERY_LIST_DEFAULT })),
        before: Type.Optional(Id),
      }),
      response: { 200: Type.Array(DeliverySchema) },
    },
    handler: async (req, _reply, { services, auth }) =>
      (await services.webhooks.deliveries(auth, req.params.id, req.query)).map(serializeDelivery),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/webhooks/:id/deliveries/:deliveryId/retry',
    ownerOnly: true,
    optionalBody: true,
    schema: {
      tags: TAGS,
      summary: 'Send one delivery again, now (owner); 409 while it is being sent',
      params: Type.Object({ id: Id, deliveryId: Id }),
      response: { 200: DeliverySchema },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializeDelivery(await services.webhooks.retry(auth, req.params.id, req.params.deliveryId)),
  }),
];
