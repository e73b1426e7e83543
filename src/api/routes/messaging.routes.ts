import { Type, type TSchema } from 'typebox';
import { ALL, V13, defineRoute } from '../route.js';
import { MAX_VALUES, requiredIds } from '../../domain/leads/lead-filters.js';
import { Id, IdParams, idsQuery } from '../schemas/common.js';
import { VERSION_TRAITS, type ApiVersion } from '../versions.js';
import { serializeHistoryMessages, serializeHistoryPage, serializePosted, serializeSources } from '../serializers/messaging.serializer.js';

const MAX_ID = 2 ** 53 - 1;
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Str = (description?: string) => Type.String(description ? { description } : {});

/** An id as clients send it: a number, or the same number as a string. */
const IdInput = (description: string) =>
  Type.Union([Type.Integer({ minimum: 1, maximum: MAX_ID }), Type.String({ pattern: '^\\s*[0-9]{1,16}\\s*$', maxLength: 20 })], {
    description,
  });

// --- responses ----------------------------------------------------------------------------------

const Attachment = Type.Object({
  type: Str('photo, doc, link, video, audio, sticker or market'),
  url: Type.String(),
  text: Type.Optional(Str('File name')),
  preview: Type.Optional(Str('Video preview link')),
  filesize: Type.Optional(Type.Number({ description: 'Bytes' })),
});
const Content = Type.Object({ text: Type.String(), url: Type.String(), attachments: Type.Array(Attachment) });
const Sender = Type.Object(
  {
    id: Type.Optional(
      Type.Integer({
        description: "Customer profile id; on outgoing messages the integration's externalId when it is an integer (absent otherwise)",
      }),
    ),
    customerId: Type.Optional(Type.Integer()),
    login: Type.Optional(Type.String()),
    avatar: Type.Optional(Type.String()),
    type: Type.Optional(Type.String()),
    socialId: Type.Optional(Type.String()),
    profileUrl: Type.Optional(Type.String()),
    userId: Type.Optional(Type.Integer({ description: 'Employee who sent an outgoing message' })),
    automation: Type.Optional(
      Type.Literal(true, { description: 'An outgoing message an automation rule sent (no `userId` then; docs/api/automation.md)' }),
    ),
  },
  { title: 'MessageSender', description: 'For outgoing messages only `id` (and `userId`, or `automation`)' },
);
const Preview = Nullable(
  Type.Object(
    {
      photo: Type.Optional(Type.String()),
      description: Type.Optional(Type.String()),
      owner: Type.Optional(Type.String()),
      url: Type.Optional(Type.String()),
    },
    { description: 'The post a comment refers to' },
  ),
);
const ReplyTo = Nullable(
  Type.Object(
    {
      messageId: Type.Integer(),
      datetime: Type.Integer({ description: 'Unix ms' }),
      incoming: Type.Boolean(),
      preview: Preview,
      sender: Sender,
      message: Content,
    },
    { title: 'QuotedMessage', description: 'The quoted message' },
  ),
);
const Sa = Type.Object({ id: Id, type: Type.String(), login: Type.String(), avatar: Type.String() });

function sourceSchema(identifier: boolean) {
  return Type.Object(
    {
      id: Str('Channel id at the provider'),
      realId: Type.Integer({ description: 'Channel id in the service' }),
      name: Nullable(Type.String()),
      type: Str('message, comment, photo, video or market'),
      saId: Type.Integer({ description: 'Integration id' }),
      sender: Str('Id of the customer who wrote through this channel'),
      token: Nullable(Type.String()),
      ...(identifier ? { identifier: Str('Id of the network or messenger account (v1.2+)') } : {}),
      expires: Nullable(Type.String({ description: 'Deadline for answering, ISO 8601' })),
    },
    { title: identifier ? 'Source' : 'SourceV11', description: 'Source (message channel of a lead)' },
  );
}

const DeliveryError = Type.Object(
  { code: Type.Integer(), title: Type.String(), message: Type.String() },
  { description: "The provider's reason for a failed delivery" },
);
const deliveryFields = {
  status: Type.Optional(
    Type.String({
      enum: ['sent', 'delivered', 'read', 'failed'],
      description: 'Outgoing messages of channels that report delivery (msgra_business_api): how far the message got (v1.3)',
    }),
  ),
  error: Type.Optional(DeliveryError),
};

/** The component name of a history message shape: v1.3's is the plain name, older shapes are suffixed. */
function historyTitle(name: string, identifier: boolean, delivery: boolean): string {
  return `${name}${delivery ? '' : identifier ? 'V12' : 'V11'}`;
}

function historyMessageSchema(identifier: boolean, delivery = false) {
  return Type.Object(
    {
      messageId: Type.String(),
      datetime: Type.Integer({ description: 'Unix ms' }),
      sa: Sa,
      incoming: Type.Boolean(),
      message: Content,
      sender: Sender,
      source: sourceSchema(identifier),
      replyTo: ReplyTo,
      preview: Preview,
      ...(delivery ? deliveryFields : {}),
    },
    { title: historyTitle('HistoryMessage', identifier, delivery), description: 'History message' },
  );
}

const withIdentifier = (version: ApiVersion) => VERSION_TRAITS[version].sourceIdentifier;

// --- requests -----------------------------------------------------------------------------------

const Media = Type.Object(
  {},
  { additionalProperties: true, maxProperties: 50, description: 'The media object the upload operation answered' },
);
const messageBody = (types: string[]) =>
  Type.Object({
    text: Type.Optional(Nullable(Type.String({ maxLength: 65_536 }))),
    attachment: Type.Optional(
      Type.Object({
        type: Type.Optional(Type.String({ enum: types, description: 'Taken from the file when absent' })),
        media: Media,
      }),
    ),
  });

const Template = Type.Object(
  {
    namespace: Type.String({ minLength: 1, maxLength: 255 }),
    language: Type.Object({
      policy: Type.Optional(Type.String({ maxLength: 50, description: 'Language policy; `deterministic` when absent' })),
      code: Type.String({ minLength: 1, maxLength: 20 }),
    }),
    name: Type.String({ minLength: 1, maxLength: 512 }),
    component_values: Type.Optional(
      Type.Array(Type.Object({}, { additionalProperties: true, maxProperties: 20 }), { maxItems: 20, description: 'Data for rendering' }),
    ),
  },
  { description: 'Template message (form B); only integrations with templates (msgra_business_api)' },
);

const sendFields = {
  message: Type.Optional(Nullable(messageBody(['photo', 'doc', 'video']))),
  template: Type.Optional(Nullable(Template)),
  source: Type.Optional(
    Nullable(
      Type.Union([Type.Integer({ minimum: 1, maximum: MAX_ID }), Type.String({ maxLength: 255 })], {
        description: "The channel's realId, or its id string; the lead's latest message channel when absent",
      }),
    ),
  ),
  userId: Type.Optional(Nullable(IdInput('Employee sending; the caller when absent (a manager may send only as itself)'))),
  saId: Type.Optional(Nullable(IdInput('Integration of the channel (checked from v1.2; ignored by v1.1)'))),
  customId: Type.Optional(
    Nullable(Type.String({ maxLength: 255, description: 'Idempotency key per lead; returned in the outgoing message event' })),
  ),
  replyId: Type.Optional(Nullable(IdInput('messageId of a message of this lead to quote'))),
};
const PrivateField = Type.Optional(
  Nullable(
    Type.Boolean({
      description:
        'Answer the comment (`replyId`, else the latest comment of the `source` comment channel) with one private message in the direct-message integration sharing the identifier (social1_group, photonetVOff; within 7 days; once per comment; text only)',
    }),
  ),
);
const SendBody = Type.Object(sendFields);
const SendBodyV13 = Type.Object({ ...sendFields, private: PrivateField });

const HistoryBody = Type.Object({
  cursor: Type.Optional(
    Nullable(
      Type.Union([Type.Integer({ minimum: -1, maximum: MAX_ID }), Type.String({ pattern: '^-?[0-9]{1,16}$' })], {
        description: 'From the previous page; omit for the newest page',
      }),
    ),
  ),
});

const PostBody = Type.Object({
  message: Type.Optional(Nullable(messageBody(['photo', 'doc']))),
  destination: Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Integer({ minimum: 1, maximum: MAX_ID })], {
    description: 'Phone number in international format, or a login',
  }),
  saId: IdInput('Integration id (msgra or msgrb_personal)'),
  customId: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
});

const CheckContactBody = Type.Object({
  saId: IdInput('Integration id'),
  chatId: Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Integer()], {
    description: 'Contact or chat id at the provider',
  }),
});

const LeadParams = IdParams;
const HistoryParams = Type.Object({ id: Id, realId: Id });
const tags = ['messaging'];
const leadIds = idsQuery('lead', 'Lead ids');

export const messagingRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/messaging/:id/sources',
    schema: (version: ApiVersion) => ({
      tags,
      summary: "A lead's channels (sources)",
      params: LeadParams,
      response: { 200: Type.Array(sourceSchema(withIdentifier(version))) },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      serializeSources(await services.messaging.sources(auth, req.params.id), traits),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/messaging/sources',
    schema: (version: ApiVersion) => ({
      tags,
      summary: `Several leads' channels: GET /v1.3/messaging/sources?lead=1&lead=2 (at most ${MAX_VALUES})`,
      description:
        'For each lead the caller can see, in the order asked, what `GET /v1.3/messaging/<id>/sources` answers; ids of leads it cannot see, ' +
        `or of none, are left out. ${leadIds.rule}`,
      querystring: leadIds.querystring,
      response: {
        200: Type.Array(
          Type.Object(
            { leadId: Type.Integer(), sources: Type.Array(sourceSchema(withIdentifier(version))) },
            { title: 'LeadSources', description: "A lead's channels" },
          ),
        ),
      },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      (await services.messaging.sourcesOfLeads(auth, requiredIds(req.query as Record<string, unknown>, 'lead'))).map((l) => ({
        leadId: l.leadId,
        sources: serializeSources(l.sources, traits),
      })),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/messaging/:id/history/:realId',
    optionalBody: true,
    schema: (version: ApiVersion) => ({
      tags,
      summary: "A page of a channel's history, newest first (50 per page; cursor -1: no earlier page)",
      params: HistoryParams,
      body: HistoryBody,
      response: {
        200: Type.Object({
          cursor: Type.Integer({ description: 'Send it for the next, earlier page; -1 when there is none' }),
          source: Type.Integer({ description: 'The realId asked for' }),
          messages: Type.Array(historyMessageSchema(withIdentifier(version), VERSION_TRAITS[version].deliveryStatus)),
        }),
      },
    }),
    handler: async (req, _reply, { services, auth, traits }) => {
      const raw = req.body?.cursor;
      const cursor = raw === undefined || raw === null ? undefined : Number(raw);
      return serializeHistoryPage(await services.messaging.history(auth, req.params.id, req.params.realId, cursor), traits);
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/messaging/:id/send',
    schema: (version: ApiVersion) => ({
      tags,
      summary: 'Send a message (form A) or a template message (form B) to a channel of the lead',
      description:
        'Synchronous: 200 once the channel accepted (the stored History messages), 422 when it refused, 502/504 when it failed or did not answer; nothing is stored unless accepted. Repeating a `customId` answers the first messages without sending again. 402 when the account has expired.',
      params: LeadParams,
      body: VERSION_TRAITS[version].privateReplies ? SendBodyV13 : SendBody,
      response: { 200: Type.Array(historyMessageSchema(withIdentifier(version), VERSION_TRAITS[version].deliveryStatus)) },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      serializeHistoryMessages(
        await services.messaging.send(auth, req.params.id, req.body, {
          honourSaId: traits.sendSaId,
          privateReplies: traits.privateReplies,
        }),
        traits,
      ),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/messaging/post',
    schema: (version: ApiVersion) => ({
      tags,
      summary: 'Write first to a contact (msgra, msgrb_personal; daily limit of new contacts)',
      description:
        "Finds or creates the customer, channel and lead of the destination. New contacts count against the integration's limit per UTC day (429 `daily_limit` with Retry-After at the next UTC midnight).",
      body: PostBody,
      response: {
        200: Type.Array(
          Type.Object(
            { ...historyMessageSchema(withIdentifier(version), VERSION_TRAITS[version].deliveryStatus).properties, leadId: Type.Integer() },
            {
              title: historyTitle('HistoryMessageWithLead', withIdentifier(version), VERSION_TRAITS[version].deliveryStatus),
              description: 'History message with its lead',
            },
          ),
        ),
      },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      serializePosted(await services.messaging.post(auth, { ...req.body, destination: String(req.body.destination) }), traits),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/messaging/check-contact',
    schema: {
      tags,
      summary: "Whether the integration's channel can reach a contact (404 when not)",
      body: CheckContactBody,
      response: { 200: Type.Object({ exists: Type.Boolean() }) },
    },
    handler: async (req, _reply, { services, auth }) => ({ exists: await services.messaging.checkContact(auth, req.body) }),
  }),
];
