import {
  siFacebook,
  siInstagram,
  siMessenger,
  siOdnoklassniki,
  siTelegram,
  siViber,
  siVk,
  siWhatsapp,
  type SimpleIcon,
} from 'simple-icons';
import type { MessageKey } from '../i18n/en';
import type { ChannelHelpPage } from '../routes';

/**
 * The one table of channel types in the app (docs/channels/README.md has the same for owners):
 * every place that shows a type (lead badges, filters, conversation header, customer card,
 * reports, notifications, search results, settings) shows its name and glyph from here, never the
 * API code. Glyphs are Simple Icons (CC0-1.0); the site chat's is Parley's own.
 */
export type ChannelGroup = 'messengers' | 'social' | 'site';

/** A glyph: one SVG path in a 24x24 box, and its brand colour. */
export interface Glyph {
  path: string;
  hex: string;
}

export interface ChannelType {
  name: MessageKey;
  description: MessageKey;
  group: ChannelGroup;
  glyph: Glyph;
  /** `official`: the provider's API; `personal`: a personal account through a bridge (unofficial: risk of a ban); `own`: Parley's site chat. */
  kind: 'official' | 'personal' | 'own';
  help: ChannelHelpPage;
}

const glyph = (icon: SimpleIcon): Glyph => ({ path: icon.path, hex: icon.hex });
/** A speech bubble: the site chat. */
const SITE_CHAT: Glyph = {
  path: 'M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2Zm3 6.5a1.5 1.5 0 1 0 0 .01Zm5 0a1.5 1.5 0 1 0 0 .01Zm5 0a1.5 1.5 0 1 0 0 .01Z',
  hex: '4F46E5',
};

/** Types whose name and description keys are `channels.<key>.name` and `.description`. */
type NamedKey =
  | 'msgra_business_api'
  | 'msgra'
  | 'msgrb_bot'
  | 'msgrb_personal'
  | 'msgrc_bot'
  | 'social1_messenger'
  | 'social1_group'
  | 'photonetV3'
  | 'photonetVOff'
  | 'photonetV2'
  | 'social2_group'
  | 'social2_personal'
  | 'social3'
  | 'widget';

const row = (key: NamedKey, group: ChannelGroup, icon: Glyph, kind: ChannelType['kind'], help: ChannelHelpPage): ChannelType => ({
  name: `channels.${key}.name`,
  description: `channels.${key}.description`,
  group,
  glyph: icon,
  kind,
  help,
});

export const CHANNEL_TYPES = {
  msgra_business_api: row('msgra_business_api', 'messengers', glyph(siWhatsapp), 'official', 'whatsapp-cloud'),
  msgra: row('msgra', 'messengers', glyph(siWhatsapp), 'personal', 'bridge'),
  // The API keeps two codes for a WhatsApp account; people know one.
  msgra2: row('msgra', 'messengers', glyph(siWhatsapp), 'personal', 'bridge'),
  msgrb_bot: row('msgrb_bot', 'messengers', glyph(siTelegram), 'official', 'telegram'),
  msgrb_personal: row('msgrb_personal', 'messengers', glyph(siTelegram), 'personal', 'bridge'),
  msgrc_bot: row('msgrc_bot', 'messengers', glyph(siViber), 'official', 'viber'),
  social1_messenger: row('social1_messenger', 'messengers', glyph(siMessenger), 'official', 'messenger'),
  photonetV3: row('photonetV3', 'social', glyph(siInstagram), 'official', 'instagram'),
  photonetVOff: row('photonetVOff', 'social', glyph(siInstagram), 'official', 'instagram'),
  photonetV2: row('photonetV2', 'social', glyph(siInstagram), 'personal', 'bridge'),
  social1_group: row('social1_group', 'social', glyph(siFacebook), 'official', 'messenger'),
  social2_group: row('social2_group', 'social', glyph(siVk), 'official', 'vk'),
  social2_personal: row('social2_personal', 'social', glyph(siVk), 'personal', 'bridge'),
  social3: row('social3', 'social', glyph(siOdnoklassniki), 'official', 'ok'),
  widget: row('widget', 'site', SITE_CHAT, 'own', 'widget'),
} satisfies Record<string, ChannelType>;

export type ChannelTypeCode = keyof typeof CHANNEL_TYPES;

/** Types shown in the gallery, in its order; `msgra2` is the same WhatsApp account as `msgra` (the API keeps both). */
export const GALLERY_TYPES: readonly ChannelTypeCode[] = [
  'msgra_business_api',
  'msgrb_bot',
  'social1_messenger',
  'msgrc_bot',
  'msgra2',
  'msgrb_personal',
  'photonetV3',
  'photonetVOff',
  'social1_group',
  'social2_group',
  'social3',
  'photonetV2',
  'social2_personal',
  'widget',
];

const UNKNOWN: ChannelType = {
  name: 'channels.unknown.name',
  description: 'channels.unknown.description',
  group: 'messengers',
  glyph: SITE_CHAT,
  kind: 'official',
  help: 'widget',
};

/** The table's row of a type; a type this app does not know yet gets a neutral "Other channel". */
export function channelType(type: string): ChannelType {
  return Object.hasOwn(CHANNEL_TYPES, type) ? CHANNEL_TYPES[type as ChannelTypeCode] : UNKNOWN;
}
