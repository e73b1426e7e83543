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

export const CHANNEL_TYPES = {
  msgra_business_api: {
    name: 'channels.msgra_business_api.name',
    description: 'channels.msgra_business_api.description',
    group: 'messengers',
    glyph: glyph(siWhatsapp),
    kind: 'official',
    help: 'whatsapp-cloud',
  },
  msgra: {
    name: 'channels.msgra.name',
    description: 'channels.msgra.description',
    group: 'messengers',
    glyph: glyph(siWhatsapp),
    kind: 'personal',
    help: 'bridge',
  },
  msgra2: {
    name: 'channels.msgra.name',
    description: 'channels.msgra.description',
    group: 'messengers',
    glyph: glyph(siWhatsapp),
    kind: 'personal',
    help: 'bridge',
  },
  msgrb_bot: {
    name: 'channels.msgrb_bot.name',
    description: 'channels.msgrb_bot.description',
    group: 'messengers',
    glyph: glyph(siTelegram),
    kind: 'official',
    help: 'telegram',
  },
  msgrb_personal: {
    name: 'channels.msgrb_personal.name',
    description: 'channels.msgrb_personal.description',
    group: 'messengers',
    glyph: glyph(siTelegram),
    kind: 'personal',
    help: 'bridge',
  },
  msgrc_bot: {
    name: 'channels.msgrc_bot.name',
    description: 'channels.msgrc_bot.description',
    group: 'messengers',
    glyph: glyph(siViber),
    kind: 'official',
    help: 'viber',
  },
  social1_messenger: {
    name: 'channels.social1_messenger.name',
    description: 'channels.social1_messenger.description',
    group: 'messengers',
    glyph: glyph(siMessenger),
    kind: 'official',
    help: 'messenger',
  },
  photonetV3: {
    name: 'channels.photonetV3.name',
    description: 'channels.photonetV3.description',
    group: 'social',
    glyph: glyph(siInstagram),
    kind: 'official',
    help: 'instagram',
  },
  photonetVOff: {
    name: 'channels.photonetVOff.name',
    description: 'channels.photonetVOff.description',
    group: 'social',
    glyph: glyph(siInstagram),
    kind: 'official',
    help: 'instagram',
  },
  photonetV2: {
    name: 'channels.photonetV2.name',
    description: 'channels.photonetV2.description',
    group: 'social',
    glyph: glyph(siInstagram),
    kind: 'personal',
    help: 'bridge',
  },
  social1_group: {
    name: 'channels.social1_group.name',
    description: 'channels.social1_group.description',
    group: 'social',
    glyph: glyph(siFacebook),
    kind: 'official',
    help: 'messenger',
  },
  social2_group: {
    name: 'channels.social2_group.name',
    description: 'channels.social2_group.description',
    group: 'social',
    glyph: glyph(siVk),
    kind: 'official',
    help: 'vk',
  },
  social2_personal: {
    name: 'channels.social2_personal.name',
    description: 'channels.social2_personal.description',
    group: 'social',
    glyph: glyph(siVk),
    kind: 'personal',
    help: 'bridge',
  },
  social3: {
    name: 'channels.social3.name',
    description: 'channels.social3.description',
    group: 'social',
    glyph: glyph(siOdnoklassniki),
    kind: 'official',
    help: 'ok',
  },
  widget: {
    name: 'channels.widget.name',
    description: 'channels.widget.description',
    group: 'site',
    glyph: SITE_CHAT,
    kind: 'own',
    help: 'widget',
  },
} as const satisfies Record<string, ChannelType>;

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
