import { isBridgeType } from '../bridge/bridge-types.js';

/**
 * The network behind each integration type, as the server's sentences name it (docs/channels/README.md
 * has the same table for owners): the network, what its credential is called and where a new one
 * comes from. The agent app has its own table with translated names (web/app/src/channels/channel-types.ts).
 */
export interface NetworkInfo {
  /** The network as people know it: "Telegram", "WhatsApp". */
  network: string;
  /** What the owner pasted, as the provider calls it: "bot token", "access token". */
  credential: string;
  /** Where a working credential comes from. */
  fix: string;
}

const TELEGRAM_BOT: NetworkInfo = { network: 'Telegram', credential: 'bot token', fix: 'check it with @BotFather' };
const META_PAGE: NetworkInfo = {
  network: 'Facebook',
  credential: 'page access token',
  fix: 'make a new page access token in the Meta app and update the credentials',
};
const INSTAGRAM: NetworkInfo = {
  network: 'Instagram',
  credential: 'access token',
  fix: 'make a new Instagram access token in the Meta app and update the credentials',
};
const BRIDGE_FIX = 'start the account bridge again and log in (docs/channels/bridge.md)';

export const NETWORKS: Record<string, NetworkInfo> = {
  msgrb_bot: TELEGRAM_BOT,
  msgrb_personal: { network: 'Telegram', credential: 'account session', fix: BRIDGE_FIX },
  msgrc_bot: { network: 'Viber', credential: 'bot token', fix: 'copy the token again from the Viber Admin Panel' },
  msgra_business_api: {
    network: 'WhatsApp',
    credential: 'access token',
    fix: 'make a new permanent system-user token in Meta Business Settings and update the credentials',
  },
  msgra: { network: 'WhatsApp', credential: 'linked device', fix: BRIDGE_FIX },
  msgra2: { network: 'WhatsApp', credential: 'linked device', fix: BRIDGE_FIX },
  social1_messenger: META_PAGE,
  social1_group: META_PAGE,
  photonetV3: INSTAGRAM,
  photonetVOff: INSTAGRAM,
  photonetV2: { network: 'Instagram', credential: 'account session', fix: BRIDGE_FIX },
  social2_group: {
    network: 'VK',
    credential: 'community token',
    fix: "make a new access key in the community's settings (API usage) and update the credentials",
  },
  social2_personal: { network: 'VK', credential: 'account session', fix: BRIDGE_FIX },
  social3: { network: 'OK', credential: 'group token', fix: "make a new token in the group's API settings and update the credentials" },
  widget: { network: 'the site chat', credential: 'widget secret', fix: 'connect the site chat again' },
};

export function networkOf(type: string): NetworkInfo {
  return NETWORKS[type] ?? { network: type, credential: 'credentials', fix: 'update the credentials' };
}

/** How messages reach Parley: `widget`, `bridge`, `webhook` (the provider posts to Parley) or `polling` (Parley asks). */
export type DeliveryMode = 'webhook' | 'polling' | 'bridge' | 'widget';

/** Types that receive by webhook when Parley has a public address and by long polling otherwise. */
const POLLS_WITHOUT_PUBLIC_URL = new Set(['msgrb_bot', 'social2_group', 'social3']);

export function deliveryMode(type: string, hasPublicUrl: boolean): DeliveryMode {
  if (type === 'widget') return 'widget';
  if (isBridgeType(type)) return 'bridge';
  if (POLLS_WITHOUT_PUBLIC_URL.has(type)) return hasPublicUrl ? 'webhook' : 'polling';
  return 'webhook';
}

/** Whether the type can receive messages at all without PARLEY_PUBLIC_URL (an https address providers reach). */
export function needsPublicUrl(type: string): boolean {
  return deliveryMode(type, false) === 'webhook';
}
