import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../../services.js';
import { notFound } from '../../domain/errors.js';
import { CurrentErrorBody } from '../errors.js';
import { CHANNEL_WEBHOOK_BODY_LIMIT } from '../body-limits.js';

const Params = Type.Object({
  integrationId: Type.Integer({ minimum: 1, description: 'The integration the provider delivers for (its id in Parley)' }),
});

const Ack = Type.Object(
  { ok: Type.Boolean() },
  { description: 'Accepted: stored, recognized as a redelivery, or ignored (unknown kinds)' },
);

const TelegramUpdate = Type.Object(
  {
    update_id: Type.Integer(),
    message: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Telegram Message' })),
  },
  { additionalProperties: true, description: 'A Telegram Update (https://core.telegram.org/bots/api#update)' },
);

const ViberCallback = Type.Object(
  {
    event: Type.String({ maxLength: 64 }),
    timestamp: Type.Optional(Type.Integer()),
    message_token: Type.Optional(Type.Integer()),
    sender: Type.Optional(Type.Object({}, { additionalProperties: true })),
    message: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: 'A Viber callback (https://developers.viber.com/docs/api/rest-bot-api/#callbacks)' },
);

const VkCallback = Type.Object(
  {
    type: Type.String({ maxLength: 64 }),
    group_id: Type.Integer(),
    event_id: Type.Optional(Type.String()),
    v: Type.Optional(Type.String()),
    secret: Type.Optional(Type.String()),
    object: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: 'A VK Callback API event (https://dev.vk.com/en/api/callback/getting-started)' },
);

const OkNotification = Type.Object(
  {
    webhookType: Type.String({ maxLength: 64 }),
    timestamp: Type.Optional(Type.Integer()),
    sender: Type.Optional(Type.Object({}, { additionalProperties: true })),
    recipient: Type.Optional(Type.Object({}, { additionalProperties: true })),
    message: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: 'An OK group chat notification (https://apiok.ru/en/dev/graph_api/bot_api)' },
);

const responses = { 200: Ack, 400: CurrentErrorBody, 401: CurrentErrorBody, 404: CurrentErrorBody };

const MetaAck = Type.Object(
  {
    ok: Type.Boolean(),
    stored: Type.Integer({ description: 'Messages stored' }),
    duplicates: Type.Integer({ description: 'Messages stored before (Meta redelivers): unchanged' }),
    statuses: Type.Integer({ description: 'Delivery statuses that moved a message forward' }),
    ignored: Type.Array(Type.String(), {
      description: 'What was left aside and why (unsupported kinds, other phone numbers, other fields)',
    }),
  },
  { description: 'Committed: Meta may stop redelivering' },
);

const MetaWebhook = Type.Object(
  { object: Type.String(), entry: Type.Array(Type.Object({}, { additionalProperties: true })) },
  { additionalProperties: true, description: 'A Meta webhook (https://developers.facebook.com/docs/whatsapp/cloud-api/webhooks)' },
);

const MetaHandshake = Type.Object({
  'hub.mode': Type.Optional(Type.String({ description: '`subscribe`' })),
  'hub.verify_token': Type.Optional(Type.String({ description: 'The verify token Parley shows with the integration' })),
  'hub.challenge': Type.Optional(Type.String({ description: 'Echoed back as text/plain' })),
});

/**
 * Provider webhooks of the messenger bots, unversioned (providers are not API clients) and without
 * a bearer token: Telegram proves itself with the per-integration `X-Telegram-Bot-Api-Secret-Token`
 * given to `setWebhook`, Viber with `X-Viber-Content-Signature` (HMAC-SHA256 of the raw body keyed
 * with the bot token). The body is read raw here so the signature covers exactly what was sent and
 * nothing is parsed before the caller is known: 401 comes before 400.
 */
export async function registerChannelWebhookRoutes(app: FastifyInstance, services: Services): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    // The documented body schema is for OpenAPI; the handler checks the raw bytes itself.
    const raw = { validatorCompiler: () => () => true, bodyLimit: CHANNEL_WEBHOOK_BODY_LIMIT };

    scope.post<{ Params: { integrationId: number } }>(
      '/channels/telegram/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'Telegram bot webhook (called by Telegram)',
          description:
            'Registered with `setWebhook` when PARLEY_PUBLIC_URL is set. Wrong or missing `X-Telegram-Bot-Api-Secret-Token`: 401, nothing stored. A body that is no Update: 400. Kinds other than `message` are acknowledged and ignored.',
          security: [],
          params: Params,
          body: TelegramUpdate,
          response: responses,
        },
      },
      async (req) => {
        const id = integrationId(req.params.integrationId);
        const secret = header(req.headers['x-telegram-bot-api-secret-token']);
        await services.bots.telegramWebhook(id, secret, bytes(req.body));
        return { ok: true };
      },
    );

    scope.get<{ Params: { integrationId: number }; Querystring: Record<string, unknown> }>(
      '/channels/meta/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'Meta webhook verification (called by Meta when the callback URL is saved)',
          description:
            "Answers `hub.challenge` as text/plain when `hub.mode` is `subscribe` and `hub.verify_token` is the integration's verify token (shown with the integration to its owner); otherwise 403.",
          security: [],
          params: Params,
          querystring: MetaHandshake,
          response: { 200: Type.String(), 400: CurrentErrorBody, 403: CurrentErrorBody, 404: CurrentErrorBody },
        },
      },
      async (req, reply) => {
        const challenge = await services.meta.webhooks.verify(integrationId(req.params.integrationId), req.query ?? {});
        return reply.type('text/plain; charset=utf-8').send(challenge);
      },
    );

    scope.post<{ Params: { integrationId: number } }>(
      '/channels/meta/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'Meta webhook (WhatsApp Cloud API; called by Meta)',
          description:
            'Wrong or missing `X-Hub-Signature-256` (HMAC-SHA256 of the raw body keyed with the app secret): 401, nothing stored. A body that is no Meta webhook: 400, nothing stored. Answered 200 only once messages (with their media) and statuses are committed; a message id already stored is not stored again. Unsupported kinds, other fields and other phone numbers are acknowledged and listed in `ignored`.',
          security: [],
          params: Params,
          body: MetaWebhook,
          response: { ...responses, 200: MetaAck },
        },
      },
      async (req) => {
        const id = integrationId(req.params.integrationId);
        const outcome = await services.meta.webhooks.deliver(id, header(req.headers['x-hub-signature-256']), bytes(req.body));
        return { ok: true, ...outcome };
      },
    );

    scope.post<{ Params: { integrationId: number } }>(
      '/channels/viber/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'Viber bot webhook (called by Viber)',
          description:
            'Registered with `set_webhook`. Wrong or missing `X-Viber-Content-Signature`: 401, nothing stored. A body that is no callback: 400. Events other than `message` are acknowledged and ignored.',
          security: [],
          params: Params,
          body: ViberCallback,
          response: responses,
        },
      },
      async (req) => {
        const id = integrationId(req.params.integrationId);
        const signature = header(req.headers['x-viber-content-signature']);
        await services.bots.viberWebhook(id, signature, bytes(req.body));
        return { ok: true };
      },
    );

    scope.post<{ Params: { integrationId: number } }>(
      '/channels/vk/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'VK community Callback API (called by VK)',
          description:
            "Registered with `groups.addCallbackServer` when PARLEY_PUBLIC_URL is set. Answers `text/plain`: the confirmation string to `confirmation`, `ok` once any other event is stored. Wrong or missing `secret`: 401; another community's `group_id` or a body that is no event: 400; nothing stored.",
          security: [],
          params: Params,
          body: VkCallback,
          response: {
            200: Type.String({ description: '`ok`, or the confirmation string' }),
            400: CurrentErrorBody,
            401: CurrentErrorBody,
            404: CurrentErrorBody,
          },
        },
      },
      async (req, reply) => {
        const answer = await services.social.vkCallback(integrationId(req.params.integrationId), bytes(req.body));
        return reply.type('text/plain; charset=utf-8').send(answer);
      },
    );

    scope.post<{ Params: { integrationId: number }; Querystring: { key?: string } }>(
      '/channels/ok/:integrationId',
      {
        ...raw,
        schema: {
          tags: ['channels'],
          summary: 'OK group webhook (called by OK)',
          description:
            'Subscribed with `POST /graph/me/subscribe` when PARLEY_PUBLIC_URL is set; the address carries a `key` derived for the integration (OK signs nothing). Wrong or missing key: 401; a body that is no notification: 400; nothing stored. Answered 200 once the message is stored; notifications other than `MESSAGE_CREATED` are acknowledged and ignored.',
          security: [],
          params: Params,
          querystring: Type.Object({ key: Type.Optional(Type.String()) }),
          body: OkNotification,
          response: responses,
        },
      },
      async (req) => {
        const key = typeof req.query?.key === 'string' ? req.query.key : undefined;
        await services.social.okWebhook(integrationId(req.params.integrationId), key, bytes(req.body));
        return { ok: true };
      },
    );
  });
}

/** The path id, checked here since the route's validator is off (raw bodies): not an id -> 404. */
function integrationId(value: unknown): number {
  const id = /^\d{1,15}$/.test(String(value)) ? Number(value) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) throw notFound('Integration not found');
  return id;
}

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
const bytes = (body: unknown) => (Buffer.isBuffer(body) ? body : Buffer.alloc(0));
