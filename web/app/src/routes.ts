/**
 * Every page of the app, as a reload or a bookmark opens it: the server answers each with the app
 * (src/api/routes/app.routes.ts), and test/app-routes.test.ts walks this list.
 */
export const SETTINGS_SECTIONS = [
  'statuses',
  'employees',
  'templates',
  'tags',
  'payment-types',
  'integrations',
  'automation',
  'webhooks',
  'api-keys',
  'plugins',
  'oauth-apps',
  'connected-apps',
  'account',
] as const;
export type SettingsSection = (typeof SETTINGS_SECTIONS)[number];

/** Pages of /help/channels/<page>: where each channel's credentials come from. */
export const CHANNEL_HELP_PAGES = [
  'telegram',
  'whatsapp-cloud',
  'viber',
  'vk',
  'ok',
  'messenger',
  'instagram',
  'bridge',
  'widget',
] as const;
export type ChannelHelpPage = (typeof CHANNEL_HELP_PAGES)[number];

/** One URL of each page (ids stand for any). */
export const APP_ROUTES: readonly string[] = [
  '/',
  '/login',
  '/setup',
  '/invite?token=x',
  '/oauth/authorize',
  '/inbox',
  '/inbox/1',
  '/leads/1',
  '/funnel',
  '/search',
  '/reports',
  '/settings',
  ...SETTINGS_SECTIONS.map((s) => `/settings/${s}`),
  ...CHANNEL_HELP_PAGES.map((p) => `/help/channels/${p}`),
];
