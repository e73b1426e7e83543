import { Type, type TSchema } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { IdParams } from '../schemas/common.js';
import { serializeIntegration, type WebhookOf } from '../serializers/integrations.serializer.js';
import type { Services } from '../../services.js';
import type { IntegrationRow } from '../../db/schema.js';
import { isBridgeType } from '../../domain/bridge/bridge-types.js';
import { credentialShapes } from '../../domain/channels/credential-shapes.js';
import { INTEGRATION_TYPE_NAMES } from '../../domain/channels/integration-types.js';
import { deliveryMode, needsPublicUrl } from '../../domain/channels/networks.js';

const tags = ['integrations'];

const CredentialsBody = Type.Object(
  {
    credentials: Type.Record(Type.String(), Type.String({ maxLength: 4096 }), {
      maxProperties: 20,
      propertyNames: { minLength: 1, maxLength: 100 },
      description: 'The new credentials, the same fields as at connect; stored encrypted, never returned',
    }),
  },
  { additionalProperties: false },
);

const IntegrationType = Type.Object({
  type: Type.String(),
  fields: Type.Array(
    Type.Object({
      name: Type.String({ description: 'Field of `credentials`' }),
      pattern: Type.String({ description: 'Regular expression the trimmed value matches' }),
      format: Type.String({ description: 'What the value looks like' }),
    }),
  ),
  mode: Type.String({ enum: ['webhook', 'polling', 'bridge', 'widget'], description: 'How messages reach Parley in this installation' }),
  needsPublicUrl: Type.Boolean({ description: 'Receives nothing without PARLEY_PUBLIC_URL (an https address the provider reaches)' }),
  available: Type.Boolean({ description: 'This installation can connect it' }),
});

type WebhookFor = (services: Services, auth: { role: string }, traits: { integrationWebhook: boolean }) => WebhookOf | undefined;

/**
 * v1.3 extensions for keeping integrations working (docs/api/integrations.md "Health"): one
 * integration with its health, what each type needs, new credentials, and a reconnect.
 * `IntegrationOut` and `webhookFor` are those of integrations.routes.ts.
 */
export function integrationHealthRoutes(IntegrationOut: TSchema, webhookFor: WebhookFor) {
  const withHealth = async (services: Services, row: IntegrationRow, webhookOf: WebhookOf | undefined) =>
    serializeIntegration(row, webhookOf, (await services.integrations.health.views([row])).get(row.id));
  return [
    defineRoute({
      versions: V13,
      method: 'GET',
      url: '/integrations/types',
      schema: {
        tags,
        summary: 'What each integration type needs: its credential fields and formats, and how it receives in this installation',
        response: {
          200: Type.Object({
            publicUrl: Type.Boolean({ description: 'PARLEY_PUBLIC_URL is set: providers can post to Parley' }),
            types: Type.Array(IntegrationType),
          }),
        },
      },
      handler: async (_req, _reply, { services }) => {
        const hasPublicUrl = Boolean(services.deps.config.publicUrl);
        const types = INTEGRATION_TYPE_NAMES.map((type) => ({
          type,
          fields: credentialShapes(type),
          mode: deliveryMode(type, hasPublicUrl),
          needsPublicUrl: needsPublicUrl(type),
          available: isBridgeType(type) || Boolean(services.channels.get(type)?.connect),
        }));
        return { publicUrl: hasPublicUrl, types };
      },
    }),
    defineRoute({
      versions: V13,
      method: 'GET',
      url: '/integrations/:id',
      schema: { tags, summary: 'One integration with its health', params: IdParams, response: { 200: IntegrationOut } },
      handler: async (req, _reply, { services, auth, traits }) =>
        withHealth(services, await services.integrations.get(auth, req.params.id), webhookFor(services, auth, traits)),
    }),
    defineRoute({
      versions: V13,
      method: 'PUT',
      url: '/integrations/:id/credentials',
      ownerOnly: true,
      schema: {
        tags,
        summary: 'Replace the credentials of an integration, keeping its id and leads',
        description:
          'Checked with the provider before they are stored: a refusal answers 422 with a sentence naming the cause and keeps the old ones; credentials of another provider account answer 422. Bridges rotate their token instead (400).',
        params: IdParams,
        body: CredentialsBody,
        response: { 200: IntegrationOut },
      },
      handler: async (req, _reply, { services, auth, traits }) =>
        withHealth(
          services,
          await services.integrations.updateCredentials(auth, req.params.id, req.body.credentials),
          webhookFor(services, auth, traits),
        ),
    }),
    defineRoute({
      versions: V13,
      method: 'POST',
      url: '/integrations/:id/reconnect',
      ownerOnly: true,
      optionalBody: true,
      schema: {
        tags,
        summary: 'Connect again with the stored credentials (registers the webhook anew)',
        description: 'The outcome is in the answer: `status` and `health.lastError` (a refusal or a provider that did not answer).',
        params: IdParams,
        response: { 200: IntegrationOut },
      },
      handler: async (req, _reply, { services, auth, traits }) =>
        withHealth(services, await services.integrations.reconnect(auth, req.params.id), webhookFor(services, auth, traits)),
    }),
    defineRoute({
      versions: V13,
      method: 'POST',
      url: '/integrations/:id/test',
      ownerOnly: true,
      schema: {
        tags,
        summary: 'Send a test message to the owner (types whose provider lets a business write first)',
        description:
          "WhatsApp Business API: Meta's sample template `hello_world` (en_US) to `to`. Other types: 400. A refusal by the provider answers 422 with its reason, a failure 502, no answer 504.",
        params: IdParams,
        body: Type.Object(
          { to: Type.String({ minLength: 1, maxLength: 32, description: 'The phone number to write to, in international format' }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ messageId: Type.String({ description: "The provider's id of the message sent" }) }) },
      },
      handler: async (req, _reply, { services, auth }) => services.integrations.sendTest(auth, req.params.id, req.body.to),
    }),
  ];
}
