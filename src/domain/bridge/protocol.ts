import { Ajv, type ValidateFunction } from 'ajv';
import { Type, type Static, type TSchema } from 'typebox';

/**
 * The account bridge protocol (docs/channels/bridge.md): every message both ways, as TypeBox
 * schemas. They are the single source: the WebSocket route validates with them, and the JSON
 * Schema files under docs/channels/bridge-schemas/ are printed from them (a test keeps both equal).
 */
export const BRIDGE_PROTOCOL_VERSION = 1;

const Text = (max: number, extra: object = {}) => Type.String({ maxLength: max, ...extra });
const Id = Text(256, { minLength: 1, description: 'A provider id, as text' });
const Millis = Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1, description: 'Unix milliseconds' });
const RequestId = Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1, description: "Parley's id of the request" });
/** A bridge may name its integration on any message; a different one than its token's is refused. */
const Claim = {
  integrationId: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1, description: 'Must be the integration of the token when given' }),
  ),
};

const MediaRef = Type.Object(
  {
    type: Type.Union([Type.Literal('photo'), Type.Literal('doc'), Type.Literal('video'), Type.Literal('audio'), Type.Literal('sticker')]),
    url: Text(2048, { minLength: 1, description: 'A URL answered by the media upload (or any public URL)' }),
    name: Type.Optional(Text(255)),
    size: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1 })),
  },
  { additionalProperties: false },
);

// --- bridge -> Parley ----------------------------------------------------------------------------

export const HelloIn = Type.Object(
  { type: Type.Literal('hello'), protocol: Type.Integer({ minimum: 1, maximum: 1000 }), client: Type.Optional(Text(200)), ...Claim },
  { additionalProperties: false, description: 'First message of the bridge: the protocol version it speaks, and its name/version' },
);

export const LoginQr = Type.Object(
  {
    type: Type.Literal('login.qr'),
    data: Text(2048, { minLength: 1, description: 'The text the QR code encodes (e.g. tg://login?token=...)' }),
    expiresAt: Millis,
    ...Claim,
  },
  { additionalProperties: false, description: 'A QR code to scan with the phone; a new one replaces it when it expires' },
);

export const LoginPrompt = Type.Object(
  {
    type: Type.Literal('login.prompt'),
    kind: Type.Union([Type.Literal('phone'), Type.Literal('code'), Type.Literal('password')]),
    hint: Type.Optional(Text(500, { description: 'Shown to the owner (e.g. the 2FA password hint)' })),
    error: Type.Optional(Text(500, { description: 'Why the previous answer was not taken' })),
    ...Claim,
  },
  { additionalProperties: false, description: 'The bridge waits for the owner to type a phone number, a login code or the 2FA password' },
);

export const Session = Type.Object(
  {
    type: Type.Literal('session'),
    state: Type.Union([Type.Literal('active'), Type.Literal('lost')]),
    reason: Type.Optional(Text(500)),
    ...Claim,
  },
  { additionalProperties: false, description: 'The personal session: logged in and alive, or lost (logged out, banned, revoked)' },
);

export const Identity = Type.Object(
  {
    type: Type.Literal('identity'),
    login: Text(255, { description: "The integration's `login`: the account's name as people see it (username, or the phone)" }),
    externalId: Text(255, {
      minLength: 1,
      description: "The integration's `externalId`: the account's own id on the provider (the sender id of its outgoing messages)",
    }),
    identifier: Type.Optional(Text(255, { description: "The integration's `identifier` (e.g. the phone); `externalId` when absent" })),
    avatar: Type.Optional(Text(2048, { description: "The integration's `avatar` URL" })),
    ...Claim,
  },
  {
    additionalProperties: false,
    description: 'The connected account: required once logged in, before `session: active` (docs/channels/bridge.md "Identity")',
  },
);

export const Inbound = Type.Object(
  {
    type: Type.Literal('inbound'),
    id: Id,
    chatId: Id,
    datetime: Millis,
    sender: Type.Object(
      { socialId: Id, login: Type.Optional(Text(255)), name: Type.Optional(Text(255)), avatar: Type.Optional(Text(2048)) },
      { additionalProperties: false },
    ),
    text: Type.Optional(Text(65536)),
    attachments: Type.Optional(Type.Array(MediaRef, { maxItems: 10 })),
    replyTo: Type.Optional(Id),
    ...Claim,
  },
  { additionalProperties: false, description: 'A message the account received; acknowledged with {type:"ack", id} once stored' },
);

const ResultBase = { type: Type.Literal('result'), requestId: RequestId, ...Claim };
export const Result = Type.Union(
  [
    Type.Object(
      {
        ...ResultBase,
        ok: Type.Literal(true),
        externalIds: Type.Optional(
          Type.Array(Id, {
            minItems: 1,
            maxItems: 20,
            description: 'send (required): the ids of the messages made, in order: the text first, then the file when sent apart',
          }),
        ),
        chatId: Type.Optional(
          Text(256, {
            minLength: 1,
            description: "send: the provider's canonical id of the chat written to, when it differs from the request's chatId",
          }),
        ),
        exists: Type.Optional(Type.Boolean({ description: 'check: whether the contact can be written to' })),
        contactId: Type.Optional(
          Text(256, { minLength: 1, description: "check: the chat id the contact is reached at (Parley's chat id for it from then on)" }),
        ),
        profile: Type.Optional(
          Type.Object(
            { name: Type.Optional(Text(255)), login: Type.Optional(Text(255)), avatar: Type.Optional(Text(2048)) },
            { additionalProperties: false, description: 'profile: what the account sees of the contact' },
          ),
        ),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        ...ResultBase,
        ok: Type.Literal(false),
        refused: Text(1000, { minLength: 1, description: 'The provider refused: 422 with this reason' }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      { ...ResultBase, ok: Type.Literal(false), retryable: Text(1000, { minLength: 1, description: 'A failure worth retrying: 502' }) },
      { additionalProperties: false },
    ),
  ],
  { description: 'The answer to a request, once per requestId' },
);

export const StatusIn = Type.Object(
  {
    type: Type.Literal('status'),
    messageId: Id,
    status: Type.Union([Type.Literal('delivered'), Type.Literal('read')]),
    ...Claim,
  },
  { additionalProperties: false, description: 'What became of a message sent from Parley (informational)' },
);

export const BridgeInbound = Type.Union([HelloIn, LoginQr, LoginPrompt, Session, Identity, Inbound, Result, StatusIn]);
export type BridgeInbound = Static<typeof BridgeInbound>;

// --- Parley -> bridge ----------------------------------------------------------------------------

export const HelloOut = Type.Object(
  {
    type: Type.Literal('hello'),
    protocol: Type.Literal(BRIDGE_PROTOCOL_VERSION),
    integrationId: Type.Integer(),
    integrationType: Type.String(),
    now: { ...Millis, description: "Parley's clock (Unix ms): request deadlines are on this clock" },
  },
  { additionalProperties: false, description: "Parley's answer to the bridge's hello" },
);

const RequestBase = { requestId: RequestId, deadline: Millis };
export const SendRequest = Type.Object(
  {
    type: Type.Literal('send'),
    ...RequestBase,
    chatId: Id,
    text: Type.Optional(Text(65536)),
    attachment: Type.Optional(
      Type.Object(
        {
          type: Type.String(),
          url: Text(2048),
          name: Type.Optional(Text(255)),
          mime: Type.Optional(Text(255)),
          size: Type.Optional(Type.Integer()),
        },
        { additionalProperties: false },
      ),
    ),
    replyTo: Type.Optional(Id),
  },
  { additionalProperties: false, description: 'Send a message; answer with a result' },
);
export const CheckRequest = Type.Object(
  {
    type: Type.Literal('check'),
    ...RequestBase,
    contact: Text(256, { description: 'A phone in international format, a login or a chat id' }),
  },
  { additionalProperties: false, description: 'Can the account write to this contact? Answer with a result carrying exists' },
);
export const ProfileRequest = Type.Object(
  { type: Type.Literal('profile'), ...RequestBase, socialId: Id },
  { additionalProperties: false, description: "Read a contact's profile; answer with a result carrying profile" },
);
export const LoginAnswer = Type.Object(
  {
    type: Type.Literal('login.answer'),
    ...RequestBase,
    kind: Type.Union([Type.Literal('phone'), Type.Literal('code'), Type.Literal('password'), Type.Literal('qr')]),
    value: Text(500, { description: 'What the owner typed (empty for kind qr: a new QR code is wanted)' }),
  },
  { additionalProperties: false, description: "The owner's answer to a login prompt; answer with a result (refused: shown to the owner)" },
);
export const Ack = Type.Object(
  { type: Type.Literal('ack'), id: Id },
  { additionalProperties: false, description: 'An inbound message is stored (or was already): the bridge may forget it' },
);
export const ErrorOut = Type.Object(
  { type: Type.Literal('error'), code: Type.String(), message: Type.String() },
  { additionalProperties: false, description: 'Sent before Parley closes the socket, or for a message it refused' },
);

export const BridgeOutbound = Type.Union([HelloOut, SendRequest, CheckRequest, ProfileRequest, LoginAnswer, Ack, ErrorOut]);
export type BridgeOutbound = Static<typeof BridgeOutbound>;
export type BridgeResult = Static<typeof Result>;

/** Every message's schema by file name: what docs/channels/bridge-schemas/ holds. */
export const BRIDGE_SCHEMAS: Record<string, TSchema> = {
  'in.hello': HelloIn,
  'in.login.qr': LoginQr,
  'in.login.prompt': LoginPrompt,
  'in.session': Session,
  'in.identity': Identity,
  'in.inbound': Inbound,
  'in.result': Result,
  'in.status': StatusIn,
  'out.hello': HelloOut,
  'out.send': SendRequest,
  'out.check': CheckRequest,
  'out.profile': ProfileRequest,
  'out.login.answer': LoginAnswer,
  'out.ack': Ack,
  'out.error': ErrorOut,
};

/** A schema as a standalone JSON Schema document. */
export function jsonSchemaDocument(name: string, schema: TSchema): Record<string, unknown> {
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: `https://parley.invalid/bridge/v${BRIDGE_PROTOCOL_VERSION}/${name}.json`,
    title: name,
    ...JSON.parse(JSON.stringify(schema)),
  };
}

// Compiled when the first bridge frame arrives, not when the server loads (most never see one).
let validateInbound: ValidateFunction | undefined;
const inboundValidator = () =>
  (validateInbound ??= new Ajv({ allErrors: false, strict: false }).compile(JSON.parse(JSON.stringify(BridgeInbound))));

/** Parses one text frame from a bridge: the message, or why it is not one. */
export function parseBridgeMessage(text: string): { ok: true; message: BridgeInbound } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  if (!inboundValidator()(value)) {
    const type =
      typeof value === 'object' && value !== null && 'type' in value ? String((value as { type: unknown }).type).slice(0, 40) : '?';
    return { ok: false, reason: `not a valid bridge message (type ${type})` };
  }
  // NUL characters are refused by PostgreSQL text columns: refuse them here, for both databases alike.
  if (hasNul(value)) return { ok: false, reason: 'NUL characters are not allowed' };
  return { ok: true, message: value as BridgeInbound };
}

function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(hasNul);
  if (typeof value === 'object' && value !== null) return Object.entries(value).some(([k, v]) => k.includes('\u0000') || hasNul(v));
  return false;
}
