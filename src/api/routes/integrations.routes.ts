import { Type, type TSchema } from 'typebox';
import { integrationHealthRoutes } from './integration-health.routes.js';
import { ALL, defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import {
  serializeIntegration,
  serializeIntegrations,
  serializeUserMapping,
  type WebhookOf,
} from '../serializers/integrations.serializer.js';
import { HOSTED_TYPE_NAMES, INTEGRATION_TYPE_NAMES } from '../../domain/channels/integration-types.js';
import { WidgetInfo } from './widget.routes.js';
import { publicBase } from '../serializers/widget.serializer.js';
import { BridgeConnectInfo, bridgeInfo } from './bridge-admin.routes.js';
import { isBridgeType } from '../../domain/bridge/bridge-types.js';

const Integration = Type.Object(
  {
    id: Id,
    type: Type.String({ description: 'Integration type (the list in docs/api/integrations.md)' }),
    login: Type.String({ description: 'Login in the messenger or account name in the network' }),
    avatar: Type.String(),
    externalId: Type.String({ description: 'Id of the connected account at the provider' }),
    status: Type.String({
      description:
        '`active`; `auth failure` when the provider refused the credentials (or a bridge lost its session); `connecting` while a personal account waits for its bridge',
    }),
    identifier: Type.String({ description: 'Shared by integrations of one external account' }),
    url: Type.String(),
  },
  { description: 'Integration (credentials are never returned)' },
);

const IntegrationWebhookSchema = Type.Object(
  {
    url: Type.Union([Type.String(), Type.Null()], {
      description: 'Callback URL to paste into the Meta app (null until PARLEY_PUBLIC_URL is set)',
    }),
    verifyToken: Type.String({ description: 'Verify token to paste next to it' }),
  },
  { description: 'Owner only, v1.3, integrations whose provider delivers to a pasted webhook (msgra_business_api)' },
);
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const HealthSchema = Type.Object(
  {
    lastInboundAt: Nullable(Type.Integer({ description: 'When a customer message last arrived (Unix ms), null when never' })),
    lastOutboundAt: Nullable(Type.Integer({ description: 'When the provider last accepted a message (Unix ms), null when never' })),
    lastError: Nullable(
      Type.Object({
        at: Type.Integer({ description: 'Unix ms' }),
        code: Type.String({
          description:
            'Stable code: credentials_refused, provider_timeout, provider_failed, webhook_refused, send_refused, bridge_offline, session_lost',
        }),
        message: Type.String({ description: 'A sentence for the owner naming the network, the cause and the fix (English; plain text)' }),
      }),
    ),
    mode: Type.String({ enum: ['webhook', 'polling', 'bridge', 'widget'], description: 'How messages reach Parley' }),
  },
  { description: "v1.3: the integration's health; the last error is cleared by the next success" },
);
const IntegrationOut = Type.Object(
  { ...Integration.properties, webhook: Type.Optional(IntegrationWebhookSchema), health: Type.Optional(HealthSchema) },
  { title: 'Integration', description: 'Integration (credentials are never returned)' },
);

const Template = Type.Object(
  {
    name: Type.String(),
    language: Type.String({ description: 'Locale code, e.g. en_US (send it as template.language.code)' }),
    category: Type.String({ description: 'MARKETING, UTILITY or AUTHENTICATION' }),
    status: Type.String({ description: 'Always APPROVED: only approved templates can be sent' }),
    components: Type.Array(Type.Unknown(), { description: 'As Meta defines them (HEADER, BODY with {{n}} parameters, FOOTER, BUTTONS)' }),
  },
  { description: 'An approved message template of the WhatsApp Business Account' },
);

/** The webhook object for owners on versions that show it. */
export const webhookFor = (
  services: { meta: { webhooks: { webhookInfo: WebhookOf } } },
  auth: { role: string },
  traits: { integrationWebhook: boolean },
): WebhookOf | undefined =>
  traits.integrationWebhook && auth.role === 'owner' ? (row) => services.meta.webhooks.webhookInfo(row) : undefined;

const ConnectBody = Type.Object({
  type: Type.String({
    enum: [...INTEGRATION_TYPE_NAMES, ...Object.values(HOSTED_TYPE_NAMES)],
    description:
      "Integration type, or the hosted service's name of one (`whatsapp` for `msgra`; docs/api/integrations.md), answered as the type",
  }),
  login: Type.Optional(Type.String({ maxLength: 255, description: 'Used when the provider does not tell one' })),
  credentials: Type.Optional(
    Type.Record(Type.String(), Type.String({ maxLength: 4096 }), {
      maxProperties: 20,
      propertyNames: { minLength: 1, maxLength: 100 },
      description: 'Provider credentials, field name -> text (e.g. `token`); stored encrypted, never returned',
    }),
  ),
  settings: Type.Optional(
    Type.Object(
      {
        businessSystems: Type.Optional(
          Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
            maxItems: 10,
            description: 'External business systems (CRM, warehouse) linked to the integration: enables user mappings',
          }),
        ),
      },
      { additionalProperties: true, maxProperties: 50, description: 'Per-type settings (at most 16 KiB as JSON)' },
    ),
  ),
});

const UserMapping = Type.Object(
  { default: Type.Integer({ description: 'Employee that gets what maps to no one (the owner by default)' }) },
  { additionalProperties: Type.Integer(), description: 'External user id -> employee id' },
);

const UserMappingBody = Type.Record(Type.String(), Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }), {
  maxProperties: 1000,
  propertyNames: { minLength: 1, maxLength: 200 },
  description: 'External user id -> employee id; `default` optional (the owner when absent). Replaces the stored mapping.',
});

const tags = ['integrations'];

export const integrationRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/integrations',
    schema: { tags, summary: 'Integrations the caller may use', response: { 200: Type.Array(IntegrationOut) } },
    handler: async (_req, _reply, { services, auth, traits }) => {
      const rows = await services.integrations.list(auth);
      const health = traits.integrationHealth ? await services.integrations.health.views(rows) : undefined;
      return serializeIntegrations(rows, webhookFor(services, auth, traits), health);
    },
  }),
  ...integrationHealthRoutes(IntegrationOut, webhookFor),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/integrations/:id/templates',
    schema: {
      tags,
      summary: 'Approved message templates of a msgra_business_api integration (read from Meta)',
      description:
        'For send form B. Owner, or an employee with access to the integration. Other integration types: 400. Meta refusing or failing: 422/502/504.',
      params: IdParams,
      response: { 200: Type.Array(Template) },
    },
    handler: async (req, _reply, { services, auth }) => services.meta.templates(auth, req.params.id),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/integrations',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Connect an integration (credentials checked with the provider where an adapter can)',
      description:
        'A `widget` answers also `widget`: its public key, embed snippet, secret and settings (see GET /v1.3/integrations/<id>/widget).',
      body: ConnectBody,
      response: {
        200: Type.Object(
          { ...IntegrationOut.properties, widget: Type.Optional(WidgetInfo), bridge: Type.Optional(BridgeConnectInfo) },
          {
            description:
              'Integration (credentials are never returned); `widget` for a site widget; `webhook` for a WhatsApp Cloud API number; `bridge` (its token shown once) for a personal account',
          },
        ),
      },
    },
    handler: async (req, _reply, { services, auth, traits }) => {
      const row = await services.integrations.connect(auth, services.widget.admin.connectInput(req.body));
      const health = (await services.integrations.health.views([row])).get(row.id);
      if (isBridgeType(row.type)) {
        const token = await services.bridge.issueToken(row);
        return {
          ...serializeIntegration(row, undefined, health),
          bridge: bridgeInfo(publicBase(services.deps.config, req), row.id, row.type, token),
        };
      }
      if (row.type !== 'widget') return serializeIntegration(row, webhookFor(services, auth, traits), health);
      return {
        ...serializeIntegration(row, undefined, health),
        widget: services.widget.admin.adminView(row, publicBase(services.deps.config, req)),
      };
    },
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/integrations/:id',
    ownerOnly: true,
    schema: { tags, summary: 'Disconnect an integration (its leads and customers stay)', params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.integrations.disconnect(auth, req.params.id);
      return {};
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/integrations/:id/mappings/users',
    schema: {
      tags,
      summary: 'User mapping of an integration linked to external business systems (others: 400)',
      params: IdParams,
      response: { 200: UserMapping },
    },
    handler: async (req, _reply, { services, auth }) => serializeUserMapping(await services.integrations.userMappings(auth, req.params.id)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/integrations/:id/mappings/users',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Replace the user mapping (values must be employees of the account)',
      params: IdParams,
      body: UserMappingBody,
      response: { 200: UserMapping },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializeUserMapping(await services.integrations.setUserMappings(auth, req.params.id, req.body)),
  }),
];
