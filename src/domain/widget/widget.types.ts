import type { Attachment } from '../channels/channel.js';
import { invalid, type ErrorDetail } from '../errors.js';
import { en } from '../../i18n/en.js';
import { LOCALES, type Locale } from '../../i18n/index.js';

/** The integration type of the site widget. */
export const WIDGET_TYPE = 'widget';

export type PreChatMode = 'optional' | 'required' | 'off';
export const PRE_CHAT_MODES: readonly PreChatMode[] = ['optional', 'required', 'off'];
export const PRE_CHAT_FIELDS = ['name', 'email', 'phone'] as const;
/** The language of the widget's own texts: the visitor's browser's (`auto`), or one Parley speaks (src/i18n). */
export type WidgetLanguage = 'auto' | Locale;
export const WIDGET_LANGUAGES: readonly WidgetLanguage[] = ['auto', ...LOCALES];
/** The owner's texts; while one is still Parley's default, the widget shows that default in its language. */
const OWNER_TEXTS = ['title', 'greeting', 'offlineMessage'] as const;
export type PreChatField = (typeof PRE_CHAT_FIELDS)[number];

/** A widget's settings, kept in the integration's `settings` JSON (with any other keys it has). */
export interface WidgetSettings {
  title: string;
  greeting: string;
  /** `#rrggbb`. */
  color: string;
  /** Site origins (`https://shop.example`) allowed to embed the widget; empty = any origin. */
  allowedOrigins: string[];
  preChat: Record<PreChatField, PreChatMode>;
  /** Shown, with the offline form (e-mail required), while `offline` is on. */
  offlineMessage: string;
  offline: boolean;
  /** Visitors must carry `{identifier, signature}` signed with the widget secret. */
  identityVerification: boolean;
  language: WidgetLanguage;
}

export const DEFAULT_WIDGET_SETTINGS: WidgetSettings = {
  // Parley's defaults are the English ones; the widget shows them in its own language while kept.
  title: en.widget.title,
  greeting: en.widget.greeting,
  color: '#2563eb',
  allowedOrigins: [],
  preChat: { name: 'optional', email: 'optional', phone: 'off' },
  offlineMessage: en.widget.offlineMessage,
  offline: false,
  identityVerification: false,
  language: 'auto',
};

export const LIMITS = {
  title: 80,
  greeting: 500,
  offlineMessage: 500,
  origins: 50,
  origin: 255,
  text: 4000,
  name: 100,
  email: 254,
  phone: 32,
  identifier: 255,
};

const COLOR = /^#[0-9a-fA-F]{6}$/;
export const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const PHONE = /^\+?[0-9][0-9 ().-]{3,30}$/;

/** A site origin as browsers send it (`scheme://host[:port]`), or undefined. */
export function normalizeOrigin(raw: string): string | undefined {
  const trimmed = raw.trim().replace(/\/+$/, '');
  try {
    const url = new URL(trimmed);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    if (url.origin !== trimmed.toLowerCase() && url.origin !== trimmed) return undefined;
    return url.origin;
  } catch {
    return undefined;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Applies a settings patch (from connect or `PUT .../widget`) to current settings, checking every
 * given field; any bad field -> 400 listing them all, nothing changes.
 */
export function applyWidgetSettings(current: WidgetSettings, patch: Record<string, unknown>, at = 'body'): WidgetSettings {
  const next: WidgetSettings = { ...current, preChat: { ...current.preChat }, allowedOrigins: [...current.allowedOrigins] };
  const details: ErrorDetail[] = [];
  const text = (key: 'title' | 'greeting' | 'offlineMessage', min: number) => {
    const v = patch[key];
    if (v === undefined) return;
    if (typeof v !== 'string' || v.trim().length < min || v.length > LIMITS[key]) {
      details.push({ path: `${at}.${key}`, message: `must be a string of ${min} to ${LIMITS[key]} characters` });
    } else next[key] = v.trim();
  };
  text('title', 1);
  text('greeting', 0);
  text('offlineMessage', 0);
  if (patch.color !== undefined) {
    if (typeof patch.color !== 'string' || !COLOR.test(patch.color))
      details.push({ path: `${at}.color`, message: 'must be a #rrggbb color' });
    else next.color = patch.color.toLowerCase();
  }
  for (const key of ['offline', 'identityVerification'] as const) {
    if (patch[key] === undefined) continue;
    if (typeof patch[key] !== 'boolean') details.push({ path: `${at}.${key}`, message: 'must be a boolean' });
    else next[key] = patch[key] as boolean;
  }
  if (patch.allowedOrigins !== undefined) {
    const list = patch.allowedOrigins;
    if (!Array.isArray(list) || list.length > LIMITS.origins) {
      details.push({ path: `${at}.allowedOrigins`, message: `must be an array of at most ${LIMITS.origins} origins` });
    } else {
      const origins: string[] = [];
      list.forEach((o, i) => {
        const origin = typeof o === 'string' && o.length <= LIMITS.origin ? normalizeOrigin(o) : undefined;
        if (!origin) details.push({ path: `${at}.allowedOrigins.${i}`, message: 'must be an origin like https://shop.example' });
        else if (!origins.includes(origin)) origins.push(origin);
      });
      next.allowedOrigins = origins;
    }
  }
  if (patch.language !== undefined) {
    if (!WIDGET_LANGUAGES.includes(patch.language as WidgetLanguage))
      details.push({ path: `${at}.language`, message: `must be one of ${WIDGET_LANGUAGES.join(', ')}` });
    else next.language = patch.language as WidgetLanguage;
  }
  if (patch.preChat !== undefined) {
    if (!isRecord(patch.preChat)) details.push({ path: `${at}.preChat`, message: 'must be an object' });
    else {
      for (const [field, mode] of Object.entries(patch.preChat)) {
        if (!(PRE_CHAT_FIELDS as readonly string[]).includes(field)) {
          details.push({ path: `${at}.preChat.${field}`, message: 'is not a pre-chat field (name, email, phone)' });
        } else if (!PRE_CHAT_MODES.includes(mode as PreChatMode)) {
          details.push({ path: `${at}.preChat.${field}`, message: 'must be optional, required or off' });
        } else next.preChat[field as PreChatField] = mode as PreChatMode;
      }
    }
  }
  if (details.length) throw invalid('Invalid widget settings', details);
  return next;
}

/** The widget settings within an integration's stored settings (defaults for what is missing or broken). */
export function widgetSettingsOf(stored: Record<string, unknown>): WidgetSettings {
  try {
    return applyWidgetSettings(DEFAULT_WIDGET_SETTINGS, pick(stored));
  } catch {
    return DEFAULT_WIDGET_SETTINGS;
  }
}

const SETTING_KEYS = [
  'title',
  'greeting',
  'color',
  'allowedOrigins',
  'preChat',
  'offlineMessage',
  'offline',
  'identityVerification',
  'language',
];

/** Only the widget's own keys of a settings object. */
export function pick(settings: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(settings).filter(([k]) => SETTING_KEYS.includes(k)));
}

/** What the visitor's browser may know of a widget (never the secret). */
export interface PublicWidgetConfig {
  key: string;
  title: string;
  greeting: string;
  color: string;
  preChat: Record<PreChatField, PreChatMode>;
  offline: boolean;
  offlineMessage: string;
  identityVerification: boolean;
  language: WidgetLanguage;
  /** The texts still at Parley's (English) default, which the widget shows in its own language. */
  defaultTexts: Array<(typeof OWNER_TEXTS)[number]>;
}

export function publicConfig(key: string, s: WidgetSettings): PublicWidgetConfig {
  return {
    key,
    title: s.title,
    greeting: s.greeting,
    color: s.color,
    preChat: s.preChat,
    offline: s.offline,
    offlineMessage: s.offlineMessage,
    identityVerification: s.identityVerification,
    language: s.language,
    defaultTexts: OWNER_TEXTS.filter((k) => s[k] === DEFAULT_WIDGET_SETTINGS[k]),
  };
}

/** A message as the visitor sees it. `id` is the message's channel id (stable across push and history). */
export interface VisitorMessage {
  id: string;
  from: 'visitor' | 'agent';
  text: string;
  attachments: Array<{ type: string; url: string; name: string; size: number | null }>;
  /** Unix milliseconds. */
  at: number;
}

export function visitorAttachments(list: Attachment[]): VisitorMessage['attachments'] {
  return list.map((a) => ({ type: a.type, url: a.url, name: a.text ?? '', size: a.filesize ?? null }));
}

export interface VisitorProfile {
  id: string;
  name: string;
  email: string;
  phone: string;
  verified: boolean;
}

/** What `POST /widget/v1/sessions` receives. */
export interface SessionInput {
  key: string;
  token?: string;
  identifier?: string;
  signature?: string;
  name?: string;
  email?: string;
  phone?: string;
}

export interface SessionResult {
  token: string;
  resumed: boolean;
  visitor: VisitorProfile;
  widget: PublicWidgetConfig;
}

/** The owner's view of a widget: settings, embed snippet, secret. */
export interface WidgetAdminView {
  integrationId: number;
  key: string;
  snippet: string;
  scriptUrl: string;
  secret: string;
  settings: WidgetSettings;
}
