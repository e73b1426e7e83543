import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Services } from '../../services.js';
import { notFound } from '../../domain/errors.js';
import { CurrentErrorBody } from '../errors.js';

const Params = Type.Object({
  integrationId: Type.Integer({ minimum: 1, description: 'The integration the provider delivers for (its id in Parley)' }),
});

const Ack = Type.Object({ ok: Type.Boolean() }, { description: 'Accepted: stored, recognized as a redelivery, or ignored (unknown kinds)' });

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

const responses = { 200: Ack, 400: CurrentErrorBody, 401: CurrentErrorBody, 404: CurrentErrorBody };

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
    const raw = { validatorCompiler: () => () => true };

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
