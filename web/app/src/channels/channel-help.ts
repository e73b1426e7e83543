import type { MessageKey } from '../i18n/en';
import type { ChannelHelpPage } from '../routes';

/**
 * Where each channel's credentials come from, in plain steps (docs/channels/<page>.md has the long
 * form): shown in the guided connection form and on its help page /help/channels/<page>.
 */
export interface ChannelHelp {
  title: MessageKey;
  steps: readonly MessageKey[];
  /** What happens after connecting: what Parley registers itself, or what the owner pastes. */
  after: MessageKey;
}

export const CHANNEL_HELP: Record<ChannelHelpPage, ChannelHelp> = {
  telegram: {
    title: 'channels.msgrb_bot.name',
    steps: ['channels.help.telegram.1', 'channels.help.telegram.2', 'channels.help.telegram.3'],
    after: 'channels.help.telegram.after',
  },
  'whatsapp-cloud': {
    title: 'channels.msgra_business_api.name',
    steps: ['channels.help.whatsapp.1', 'channels.help.whatsapp.2', 'channels.help.whatsapp.3', 'channels.help.whatsapp.4'],
    after: 'channels.help.meta.after',
  },
  viber: {
    title: 'channels.msgrc_bot.name',
    steps: ['channels.help.viber.1', 'channels.help.viber.2'],
    after: 'channels.help.viber.after',
  },
  vk: { title: 'channels.social2_group.name', steps: ['channels.help.vk.1', 'channels.help.vk.2'], after: 'channels.help.vk.after' },
  ok: { title: 'channels.social3.name', steps: ['channels.help.ok.1', 'channels.help.ok.2'], after: 'channels.help.vk.after' },
  messenger: {
    title: 'channels.social1_messenger.name',
    steps: ['channels.help.messenger.1', 'channels.help.messenger.2', 'channels.help.messenger.3'],
    after: 'channels.help.meta.after',
  },
  instagram: {
    title: 'channels.photonetV3.name',
    steps: ['channels.help.instagram.1', 'channels.help.instagram.2', 'channels.help.instagram.3'],
    after: 'channels.help.meta.after',
  },
  bridge: {
    title: 'channels.help.bridge.title',
    steps: ['channels.help.bridge.1', 'channels.help.bridge.2'],
    after: 'channels.help.bridge.after',
  },
  widget: {
    title: 'channels.widget.name',
    steps: ['channels.help.widget.1', 'channels.help.widget.2'],
    after: 'channels.help.widget.after',
  },
};

/** The label of each credential field. */
const FIELD_LABELS: Record<string, MessageKey> = {
  token: 'channels.field.token',
  groupId: 'integrations.groupId',
  accessToken: 'wa.accessToken',
  phoneNumberId: 'wa.phoneNumberId',
  wabaId: 'wa.wabaId',
  appSecret: 'wa.appSecret',
  pageAccessToken: 'wa.pageAccessToken',
  pageId: 'wa.pageId',
};
/** Labels that differ by type: Instagram's token is the account's own, not a system user's. */
const TYPE_FIELD_LABELS: Record<string, MessageKey> = {
  'photonetV3.accessToken': 'channels.field.instagramToken',
  'photonetVOff.accessToken': 'channels.field.instagramToken',
};

/** The label of a credential field of a type. */
export function fieldLabel(type: string, field: string): MessageKey {
  return TYPE_FIELD_LABELS[`${type}.${field}`] ?? FIELD_LABELS[field] ?? 'channels.field.token';
}

/** Fields that are secrets (typed as passwords). */
export const SECRET_FIELDS = new Set(['token', 'accessToken', 'appSecret', 'pageAccessToken']);
