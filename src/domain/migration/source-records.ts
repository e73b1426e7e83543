/**
 * The source's answers read tolerantly (docs/migrate.md "What the source may send"): hosted
 * servers write ids as numbers or strings, `userId` as `userID`, times as Unix seconds,
 * milliseconds or ISO text. Each reader returns a normalized record or throws SchemaError, which
 * skips that one item (reported) while the run goes on.
 */

export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

type Obj = Record<string, unknown>;

/** An id as text: a safe integer or a non-empty string of at most 255 characters. */
export function idOf(v: unknown): string | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string' && v.length > 0 && v.length <= 255 && !v.includes('\0')) return v;
  return undefined;
}

function obj(v: unknown, what: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SchemaError(`${what} is not an object`);
  return v as Obj;
}

function requireId(o: Obj, what: string, key = 'id'): string {
  const id = idOf(o[key]);
  if (id === undefined) throw new SchemaError(`${what} without a valid ${key}`);
  return id;
}

/** Text without NUL (which PostgreSQL refuses), at most `max` characters. */
export function text(v: unknown, max = 100_000): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (typeof v !== 'string') return '';
  return v.replaceAll('\0', '').slice(0, max);
}

function nullableText(v: unknown, max = 1000): string | null {
  return v === null || v === undefined ? null : text(v, max);
}

function int(v: unknown): number | undefined {
  const n = typeof v === 'string' && /^-?\d{1,16}$/.test(v.trim()) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : undefined;
}

function bool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === '1' || v === 'true') return true;
  if (v === 0 || v === '0' || v === 'false') return false;
  return undefined;
}

/** Unix ms from ms, seconds (below 10^11) or ISO text; undefined when unreadable. */
export function timeOf(v: unknown): number | undefined {
  const n = typeof v === 'string' && /^\d{1,16}(\.\d+)?$/.test(v.trim()) ? Number(v) : v;
  if (typeof n === 'number' && Number.isFinite(n) && n >= 0) return Math.round(n < 1e11 ? n * 1000 : n);
  if (typeof v === 'string') {
    const ms = Date.parse(v);
    if (!Number.isNaN(ms) && ms >= 0) return ms;
  }
  return undefined;
}

const userIdOf = (o: Obj) => idOf(o.userId ?? o.userID ?? o.user_id ?? null);

function json(v: unknown, fallback: string): string {
  if (typeof v === 'string') return v.includes('\0') ? fallback : v;
  if (v === undefined || v === null) return fallback;
  return JSON.stringify(v).replaceAll('\\u0000', '');
}

export function list(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new SchemaError(`${what} is not a list`);
  return v;
}

export interface SrcEmployee {
  id: string;
  login: string;
  name: string | null;
  role: 'owner' | 'manager';
  allowAllDeals: boolean;
  allowedUsers: string[] | null;
  /** Integration ids of the access records; null: a record granting none. Empty: all. */
  sources: Array<string | null>;
  metadata: string;
}

export function readEmployee(v: unknown): SrcEmployee {
  const o = obj(v, 'an employee');
  const id = requireId(o, 'an employee');
  const login = text(o.login, 255).trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(login)) throw new SchemaError(`employee ${id} has no e-mail login`);
  const sources = Array.isArray(o.sources) ? o.sources.map((s) => idOf((s as Obj | null)?.saId ?? null) ?? null) : [];
  return {
    id,
    login,
    name: nullableText(o.name, 255),
    role: o.role === 'owner' ? 'owner' : 'manager',
    allowAllDeals: bool(o.allowAllDeals) ?? false,
    allowedUsers: Array.isArray(o.allowedUsers) ? o.allowedUsers.map(idOf).filter((x): x is string => x !== undefined) : null,
    sources,
    metadata: json(typeof o.metadata === 'object' && o.metadata !== null && !Array.isArray(o.metadata) ? o.metadata : {}, '{}'),
  };
}

export interface SrcIntegration {
  id: string;
  type: string;
  login: string;
  avatar: string;
  externalId: string;
  identifier: string;
  url: string;
}

export function readIntegration(v: unknown): SrcIntegration {
  const o = obj(v, 'an integration');
  const id = requireId(o, 'an integration');
  const type = text(o.type, 64);
  if (!type) throw new SchemaError(`integration ${id} has no type`);
  return {
    id,
    type: type === 'ok' ? 'social3' : type,
    login: text(o.login, 255),
    avatar: text(o.avatar, 2048),
    externalId: text(o.externalId ?? o.external_id, 255),
    identifier: text(o.identifier, 255),
    url: text(o.url, 2048),
  };
}

export interface SrcStatus {
  id: string;
  name: string;
  type: 'active' | 'completed' | 'failed' | 'ignore';
  order: number;
  color: string;
}

/** `statuses.position` is a 32-bit integer on PostgreSQL. */
const MAX_ORDER = 2 ** 31 - 1;
const STATUS_TYPES = new Set(['active', 'completed', 'failed', 'ignore']);

export function readStatus(v: unknown): SrcStatus {
  const o = obj(v, 'a status');
  const id = requireId(o, 'a status');
  const type = text(o.type, 16);
  if (!STATUS_TYPES.has(type)) throw new SchemaError(`status ${id} has an unknown type`);
  return {
    id,
    name: text(o.name, 255) || `Status ${id}`,
    type: type as SrcStatus['type'],
    order: Math.max(-MAX_ORDER, Math.min(MAX_ORDER, int(o.order) ?? 0)),
    color: text(o.color, 32),
  };
}

export function readPaymentType(v: unknown): { id: string; title: string } {
  const o = obj(v, 'a payment type');
  return { id: requireId(o, 'a payment type'), title: text(o.title, 255) };
}

export function readTag(v: unknown): { id: string; tag: string } {
  const o = obj(v, 'a tag');
  const tag = text(o.tag, 255).trim();
  if (!tag) throw new SchemaError('a tag without a value');
  return { id: requireId(o, 'a tag'), tag };
}

export interface SrcTemplateGroup {
  id: string;
  key: string;
  templates: Array<{ id: string; template: string; hotkey: string; userId: string | null }>;
}

export function readTemplateGroup(v: unknown): SrcTemplateGroup {
  const o = obj(v, 'a template group');
  const id = requireId(o, 'a template group');
  const templates = Array.isArray(o.templates)
    ? o.templates.flatMap((t) => {
        const p = typeof t === 'object' && t !== null ? (t as Obj) : undefined;
        const tid = p && idOf(p.id);
        if (!p || tid === undefined) return [];
        return [{ id: tid, template: text(p.template, 10_000), hotkey: text(p.hotkey, 64), userId: userIdOf(p) ?? null }];
      })
    : [];
  return { id, key: text(o.key, 255) || `Group ${id}`, templates };
}

export interface SrcLead {
  id: string;
  userId: string | null;
  statusId: string | null;
  unread: number;
  details: string;
  amount: number;
  tags: string[];
  integrationId: string;
  customerId: string;
  /** The list's customer object: the profile when the source has no customer endpoint. */
  customer: { login: string; name: string; avatar: string };
  responseTime: number | null;
  /** Time of the last message, when the list says it. */
  lastMessageAt: number | undefined;
  address: string;
  ttn: string;
  customData: string;
  customFields: string;
  paymentTypeId: string | null;
  items: string;
  createdAt: number | undefined;
}

export function readLead(v: unknown): SrcLead {
  const o = obj(v, 'a lead');
  const id = requireId(o, 'a lead');
  const sa = typeof o.socialAccount === 'object' && o.socialAccount !== null ? (o.socialAccount as Obj) : {};
  const customer = typeof o.customer === 'object' && o.customer !== null ? (o.customer as Obj) : {};
  const integrationId = idOf(sa.id ?? o.saId ?? null);
  const customerId = idOf(customer.id ?? o.customerId ?? null);
  if (integrationId === undefined) throw new SchemaError(`lead ${id} names no integration`);
  if (customerId === undefined) throw new SchemaError(`lead ${id} names no customer`);
  const message = typeof o.message === 'object' && o.message !== null ? (o.message as Obj) : undefined;
  const read = bool(o.read);
  // Whole milliseconds in a bigint column: a fraction or a number past 2^53 is not kept.
  const ms = typeof o.responseTime === 'number' ? Math.round(o.responseTime) : Number.NaN;
  const responseTime = Number.isSafeInteger(ms) && ms >= 0 ? ms : null;
  return {
    id,
    userId: userIdOf(o) ?? null,
    statusId: idOf(o.statusId ?? null) ?? null,
    unread: int(message?.unread) ?? (read === false ? 1 : 0),
    details: text(o.details, 10_000),
    amount: int(o.amount) ?? 0,
    tags: Array.isArray(o.tags) ? o.tags.map((t) => text(t, 255).trim()).filter(Boolean) : [],
    integrationId,
    customerId,
    customer: { login: text(customer.login, 255), name: text(customer.name, 255), avatar: text(customer.avatar, 2048) },
    responseTime,
    lastMessageAt: timeOf(message?.timestamp ?? o.timestamp),
    address: text(o.address, 1000),
    ttn: text(o.ttn, 255),
    customData: text(o.customData, 100_000),
    customFields: json(o.customFields, '{}'),
    paymentTypeId: idOf(o.paymentTypeId ?? null) ?? null,
    items: json(Array.isArray(o.items) ? o.items : [], '[]'),
    createdAt: timeOf(o.createdAt),
  };
}

export interface SrcCustomer {
  id: string;
  login: string;
  name: string;
  avatar: string;
  email: string | null;
  phone: string | null;
  address: string | null;
  profiles: Array<{ id: string; login: string; type: string; socialId: string; profileUrl: string }>;
}

export function readCustomer(v: unknown): SrcCustomer {
  const o = obj(v, 'a customer');
  const id = requireId(o, 'a customer');
  const profiles = Array.isArray(o.profiles)
    ? o.profiles.flatMap((p) => {
        const q = typeof p === 'object' && p !== null ? (p as Obj) : undefined;
        const pid = q && idOf(q.id);
        if (!q || pid === undefined) return [];
        const type = text(q.type, 64);
        return [
          {
            id: pid,
            login: text(q.login, 255),
            type: type === 'ok' ? 'social3' : type,
            socialId: text(q.socialId, 255),
            profileUrl: text(q.profileUrl, 2048),
          },
        ];
      })
    : [];
  return {
    id,
    login: text(o.login, 255),
    name: text(o.name, 255),
    avatar: text(o.avatar, 2048),
    email: nullableText(o.email, 255),
    phone: nullableText(o.phone, 64),
    address: nullableText(o.address, 1000),
    profiles,
  };
}

export interface SrcSource {
  realId: string;
  externalId: string;
  name: string | null;
  type: string;
  integrationId: string;
  sender: string;
  expiresAt: number | null;
}

export function readSource(v: unknown): SrcSource {
  const o = obj(v, 'a source');
  const realId = idOf(o.realId ?? o.id ?? null);
  if (realId === undefined) throw new SchemaError('a source without realId');
  const integrationId = idOf(o.saId ?? null);
  if (integrationId === undefined) throw new SchemaError(`source ${realId} names no integration`);
  const expires = o.expires ?? o.expies;
  return {
    realId,
    externalId: text(o.id ?? realId, 255),
    name: nullableText(o.name, 1000),
    type: text(o.type, 32) || 'message',
    integrationId,
    sender: text(o.sender, 255),
    expiresAt: expires === null || expires === undefined ? null : (timeOf(expires) ?? null),
  };
}

export interface SrcAttachment {
  type: string;
  url: string;
  text?: string;
  preview?: string;
  filesize?: number;
}

export interface SrcMessage {
  messageId: string;
  datetime: number;
  incoming: boolean;
  text: string;
  url: string;
  attachments: SrcAttachment[];
  replyTo: string | null;
  preview: string | null;
  /** Incoming: the customer profile's id. */
  profileId: string | undefined;
  /** Outgoing: the employee who wrote it, when the source says. */
  userId: string | undefined;
}

export function readMessage(v: unknown): SrcMessage {
  const o = obj(v, 'a message');
  const messageId = idOf(o.messageId ?? o.id ?? null);
  if (messageId === undefined) throw new SchemaError('a message without messageId');
  const datetime = timeOf(o.datetime ?? o.timestamp);
  if (datetime === undefined) throw new SchemaError(`message ${messageId} has no time`);
  const body = typeof o.message === 'object' && o.message !== null ? (o.message as Obj) : {};
  const sender = typeof o.sender === 'object' && o.sender !== null ? (o.sender as Obj) : {};
  const incoming = bool(o.incoming) ?? false;
  const attachments: SrcAttachment[] = Array.isArray(body.attachments)
    ? body.attachments.flatMap((a) => {
        const x = typeof a === 'object' && a !== null ? (a as Obj) : undefined;
        if (!x) return [];
        const out: SrcAttachment = { type: text(x.type, 32) || 'doc', url: text(x.url, 4096) };
        if (x.text !== undefined) out.text = text(x.text, 1000);
        if (typeof x.preview === 'string') out.preview = text(x.preview, 4096);
        if (typeof x.filesize === 'number' && Number.isFinite(x.filesize)) out.filesize = x.filesize;
        return [out];
      })
    : [];
  return {
    messageId,
    datetime,
    incoming,
    text: text(body.text),
    url: text(body.url, 4096),
    attachments,
    replyTo: o.replyTo && typeof o.replyTo === 'object' ? json(o.replyTo, 'null') : null,
    preview: o.preview && typeof o.preview === 'object' ? json(o.preview, 'null') : null,
    profileId: incoming ? idOf(sender.id ?? null) : undefined,
    userId: incoming ? undefined : (userIdOf(sender) ?? userIdOf(o)),
  };
}
