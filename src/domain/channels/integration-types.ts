/**
 * Every integration type of the API (docs/api/integrations.md) with what is true of it whatever adapter serves it: which
 * channel (source) types exist, whether it may write first and with what daily limit, the shape of
 * its uploaded media object, and the credential fields connecting requires.
 */
export const SOURCE_TYPES = ['message', 'comment', 'photo', 'video', 'market'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

/** docs/api/resources.md "Uploaded media object": one shape per group of integration types. */
export type UploadShape = 'id-url' | 'type-filename-src' | 'parts' | 'mime-name-url' | 'mime-name-path';

export interface IntegrationTypeInfo {
  sourceTypes: readonly SourceType[];
  /** Daily limit of messages to new contacts for `POST /messaging/post`, or false. */
  writeFirst: false | { dailyLimit: number };
  /** Template messages (send form B). */
  templates: boolean;
  uploadShape: UploadShape;
  requiredCredentials: readonly string[];
  /** A sender's id is its phone number (WhatsApp): a new customer's `phone` is filled from it. */
  phoneAddressed: boolean;
}

const MESSAGE_ONLY = ['message'] as const;
const COMMENTS_ONLY = ['comment', 'photo', 'video', 'market'] as const;
const ALL_SOURCES = SOURCE_TYPES;

const base = (over: Partial<IntegrationTypeInfo>): IntegrationTypeInfo => ({
  sourceTypes: ALL_SOURCES,
  writeFirst: false,
  templates: false,
  uploadShape: 'mime-name-path',
  requiredCredentials: ['token'],
  phoneAddressed: false,
  ...over,
});

export const INTEGRATION_TYPES = {
  social1_group: base({ sourceTypes: COMMENTS_ONLY, requiredCredentials: ['pageAccessToken', 'pageId', 'appSecret'] }),
  social1_messenger: base({ requiredCredentials: ['pageAccessToken', 'pageId', 'appSecret'] }),
  photonetV2: base({ uploadShape: 'mime-name-url', requiredCredentials: [] }),
  photonetVOff: base({ sourceTypes: COMMENTS_ONLY, uploadShape: 'mime-name-url', requiredCredentials: ['accessToken', 'appSecret'] }),
  photonetV3: base({ uploadShape: 'mime-name-url', requiredCredentials: ['accessToken', 'appSecret'] }),
  social2_personal: base({ sourceTypes: MESSAGE_ONLY, uploadShape: 'id-url', requiredCredentials: [] }),
  social2_group: base({ uploadShape: 'id-url', requiredCredentials: ['token', 'groupId'] }),
  social3: base({ sourceTypes: MESSAGE_ONLY, uploadShape: 'mime-name-url' }),
  msgrb_bot: base({ sourceTypes: MESSAGE_ONLY }),
  // Personal accounts are served by an account bridge (docs/channels/bridge.md): no credentials
  // are given at connect; the bridge logs in and proves itself with its bridge token.
  msgrb_personal: base({ writeFirst: { dailyLimit: 100 }, uploadShape: 'parts', requiredCredentials: [] }),
  msgra: base({
    sourceTypes: MESSAGE_ONLY,
    writeFirst: { dailyLimit: 2500 },
    uploadShape: 'type-filename-src',
    requiredCredentials: [],
    phoneAddressed: true,
  }),
  msgra2: base({ sourceTypes: MESSAGE_ONLY, uploadShape: 'type-filename-src', requiredCredentials: [], phoneAddressed: true }),
  msgra_business_api: base({
    templates: true,
    requiredCredentials: ['accessToken', 'phoneNumberId', 'appSecret', 'wabaId'],
    phoneAddressed: true,
  }),
  msgrc_bot: base({ uploadShape: 'mime-name-url' }),
  widget: base({ sourceTypes: MESSAGE_ONLY, requiredCredentials: [] }),
} satisfies Record<string, IntegrationTypeInfo>;

export type IntegrationType = keyof typeof INTEGRATION_TYPES;
export const INTEGRATION_TYPE_NAMES = Object.keys(INTEGRATION_TYPES) as IntegrationType[];

/**
 * The hosted service's own names of types, where public evidence shows one (the table and its
 * sources: docs/api/integrations.md "The hosted service's type names"). Accepted on input, matched
 * exactly (case as published); answered only to accounts whose `typeNames` setting is `hosted`.
 */
export const HOSTED_TYPE_NAMES = {
  msgra: 'whatsapp',
  msgra2: 'whatsapp2',
  photonetV2: 'instagramV2',
  photonetVOff: 'instagramVOff',
  social3: 'ok',
} as const satisfies Partial<Record<IntegrationType, string>>;

const TYPE_ALIASES: ReadonlyMap<string, IntegrationType> = new Map(
  Object.entries(HOSTED_TYPE_NAMES).map(([type, name]) => [name, type as IntegrationType]),
);

/** The canonical name of a type given on input (`whatsapp` -> `msgra`); other values unchanged. */
export function canonicalIntegrationType(value: string): string {
  return TYPE_ALIASES.get(value) ?? value;
}

export function isIntegrationType(value: string): value is IntegrationType {
  return Object.hasOwn(INTEGRATION_TYPES, value);
}

export function integrationTypeInfo(type: string): IntegrationTypeInfo | undefined {
  return isIntegrationType(type) ? INTEGRATION_TYPES[type] : undefined;
}
