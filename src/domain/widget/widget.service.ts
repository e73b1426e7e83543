import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { IntegrationRow, WidgetVisitorRow } from '../../db/schema.js';
import type { Attachment } from '../../channels/channel.js';
import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth.service.js';
import { RateLimiter } from '../auth/rate-limiter.js';
import type { Deps } from '../context.js';
import type { IngestService } from '../conversations/ingest.service.js';
import { listProfiles } from '../customers/customers.repo.js';
import { customerView } from '../customers/customers.types.js';
import { AppError, invalid, notFound, rateLimited } from '../errors.js';
import type { FilesService } from '../files/files.service.js';
import type { StoredFile } from '../files/files.types.js';
import { uploadTypeOf } from '../files/media.js';
import { findIntegration, updateIntegration } from '../integrations/integrations.repo.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import type { ConnectInput } from '../integrations/integrations.types.js';
import { parseSettings } from '../integrations/integrations.types.js';
import { leadSources } from '../messaging/messaging.repo.js';
import { requireOwner, scopeOf, visibleLead } from '../policy/policy.js';
import { VisitorHub } from './visitor-hub.js';
import * as repo from './widget.repo.js';
import {
  applyWidgetSettings,
  DEFAULT_WIDGET_SETTINGS,
  EMAIL,
  LIMITS,
  normalizeOrigin,
  PHONE,
  pick,
  PRE_CHAT_FIELDS,
  publicConfig,
  visitorAttachments,
  WIDGET_TYPE,
  widgetSettingsOf,
  type PublicWidgetConfig,
  type SessionInput,
  type SessionResult,
  type VisitorMessage,
  type VisitorProfile,
  type WidgetAdminView,
  type WidgetSettings,
} from './widget.types.js';

export const HISTORY_PAGE = 50;
const TEN_MINUTES = 10 * 60_000;
const MINUTE = 60_000;
/** How precisely `widget_visitors.last_seen_at` follows a visitor's messages. */
const LAST_SEEN_RESOLUTION_MS = MINUTE;
const KEY = /^wk_[A-Za-z0-9_-]{8,64}$/;
const CLIENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Where a visitor request comes from: its `Origin` header, IP, and this server's own origin. */
export interface VisitorRequest {
  origin: string | undefined;
  ip: string;
  /** This server's origin (PARLEY_PUBLIC_URL, else the request's): its own pages (the demo) may embed any widget. */
  selfOrigin: string | undefined;
}

/** An authenticated visitor. */
export interface Visitor {
  row: WidgetVisitorRow;
  integration: IntegrationRow;
  settings: WidgetSettings;
}

export interface WidgetParts {
  integrations: IntegrationsService;
  ingest: IngestService;
  files: FilesService;
}

/**
 * The site widget (issue 8). For owners: the connect input of a widget (settings checked, a secret
 * generated), its settings, snippet and secret. For visitors (the public protocol): sessions,
 * identity verification, messages through the ingest pipeline, attachments, history, and the
 * sockets replies and typing indicators are pushed to. Origins, sizes and rates are checked here
 * before anything is stored.
 */
export class WidgetService {
  readonly hub = new VisitorHub();
  private readonly newSessionsPerIp: RateLimiter;
  private readonly sessionCallsPerIp: RateLimiter;
  private readonly messagesPerVisitor: RateLimiter;
  private readonly messagesPerIp: RateLimiter;
  private readonly uploadsPerVisitor: RateLimiter;

  constructor(
    private readonly deps: Deps,
    private readonly parts: WidgetParts,
  ) {
    const { config } = deps;
    this.newSessionsPerIp = RateLimiter.for(deps, 'widget-new-sessions', config.widgetSessionsPerIp, TEN_MINUTES);
    this.sessionCallsPerIp = RateLimiter.for(deps, 'widget-session-calls', config.widgetSessionsPerIp * 10, TEN_MINUTES);
    this.messagesPerVisitor = RateLimiter.for(deps, 'widget-visitor-messages', config.widgetMessagesPerMinute, MINUTE);
    this.messagesPerIp = RateLimiter.for(deps, 'widget-ip-messages', config.widgetMessagesPerMinute * 3, MINUTE);
    this.uploadsPerVisitor = RateLimiter.for(deps, 'widget-uploads', Math.max(1, Math.ceil(config.widgetMessagesPerMinute / 2)), TEN_MINUTES);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  // ---- Owners -------------------------------------------------------------------------------

  /**
   * The connect input of `POST /v1.3/integrations`: for a widget, its settings checked and
   * completed with defaults, and a fresh secret (for identity verification) as its credential.
   * Other types pass unchanged.
   */
  connectInput(input: ConnectInput): ConnectInput {
    if (input.type !== WIDGET_TYPE) return input;
    const given = input.settings ?? {};
    const settings = applyWidgetSettings(DEFAULT_WIDGET_SETTINGS, pick(given), 'body.settings');
    if (input.login === undefined || input.login.trim() === '') input = { ...input, login: settings.title };
    return { ...input, settings: { ...given, ...settings }, credentials: { secret: `wsec_${crypto.randomBytes(32).toString('base64url')}` } };
  }

  /** The owner's view of a widget integration (the secret included). */
  adminView(row: IntegrationRow, base: string): WidgetAdminView {
    const integration = this.parts.integrations.channelIntegration(row);
    const scriptUrl = `${base}/widget.js`;
    return {
      integrationId: row.id,
      key: row.external_id,
      scriptUrl,
      snippet: snippetOf(scriptUrl, row.external_id),
      secret: integration.credentials.secret ?? '',
      settings: widgetSettingsOf(integration.settings),
    };
  }

  async get(auth: AuthContext, id: number, base: string): Promise<WidgetAdminView> {
    requireOwner(auth);
    return this.adminView(await this.ownWidget(auth, id), base);
  }

  /** Changes the given settings (others keep their values). */
  async updateSettings(auth: AuthContext, id: number, patch: Record<string, unknown>, base: string): Promise<WidgetAdminView> {
    requireOwner(auth);
    const row = await this.ownWidget(auth, id);
    const stored = parseSettings(row.settings);
    const next = applyWidgetSettings(widgetSettingsOf(stored), patch);
    const updated = await updateIntegration(this.db, auth.accountId, id, { settings: JSON.stringify({ ...stored, ...next }) });
    return this.adminView(updated, base);
  }

  private async ownWidget(auth: AuthContext, id: number): Promise<IntegrationRow> {
    const row = await findIntegration(this.db, auth.accountId, id);
    if (!row) throw notFound('Integration not found');
    if (row.type !== WIDGET_TYPE || !KEY.test(row.external_id)) {
      throw invalid('This integration is not a site widget', [{ path: 'params.id', message: 'is not a widget integration' }]);
    }
    return row;
  }

  /**
   * An employee typing in a widget conversation: recorded in the outbox (an internal event), from
   * which the process holding the visitor's sockets pushes it (visitor-push/).
   */
  async employeeTyping(auth: AuthContext, leadId: number, typing: boolean): Promise<void> {
    const lead = await visibleLead(this.db, await scopeOf(this.db, auth), leadId);
    const integration = await findIntegration(this.db, auth.accountId, lead.integration_id);
    if (!integration || integration.type !== WIDGET_TYPE) {
      throw invalid('Typing indicators exist only for site widget conversations', [{ path: 'params.id', message: 'is not a widget lead' }]);
    }
    const visitors = (await leadSources(this.db, lead)).filter((s) => s.type === 'message');
    if (!visitors.length) return;
    const now = this.deps.clock.now();
    await this.db.transaction().execute(async (trx) => {
      for (const source of visitors) {
        const payload = { leadId: lead.id, integrationId: integration.id, visitorId: source.external_id, typing };
        await recordEvent(trx, { accountId: auth.accountId, type: 'widget.typing', leadId: lead.id, payload }, now);
      }
    });
  }

  // ---- The widget adapter -------------------------------------------------------------------

  async visitorExists(integrationId: number, publicId: string): Promise<boolean> {
    return (await repo.findVisitor(this.db, integrationId, publicId)) !== undefined;
  }

  // ---- Visitors -----------------------------------------------------------------------------

  /** A widget by its public key, when the request's origin may use it: 404 / 403 otherwise. */
  async widgetForKey(key: string, req: VisitorRequest): Promise<{ row: IntegrationRow; settings: WidgetSettings }> {
    const row = KEY.test(key) ? await repo.findWidgetByKey(this.db, key) : undefined;
    if (row?.status !== 'active') throw new AppError(404, 'unknown_widget', 'Unknown widget key');
    const settings = widgetSettingsOf(parseSettings(row.settings));
    this.checkOrigin(settings, req);
    return { row, settings };
  }

  /**
   * The `Origin` header against the widget's allowed origins. No Origin (same-origin GETs, non-browser
   * clients, which could send any Origin anyway) passes; so does this server's own origin (the demo).
   */
  checkOrigin(settings: WidgetSettings, req: Pick<VisitorRequest, 'origin' | 'selfOrigin'>): void {
    if (req.origin === undefined || req.origin === '' || !settings.allowedOrigins.length) return;
    const origin = normalizeOrigin(req.origin);
    if (origin && (settings.allowedOrigins.includes(origin) || origin === req.selfOrigin)) return;
    throw new AppError(403, 'origin_not_allowed', 'This site is not allowed to use this widget');
  }

  async config(key: string, req: VisitorRequest): Promise<PublicWidgetConfig> {
    await this.limit(this.sessionCallsPerIp, `ip:${req.ip}`);
    const { row, settings } = await this.widgetForKey(key, req);
    return publicConfig(row.external_id, settings);
  }

  /**
   * Starts or resumes a visitor session. A valid token of this widget resumes (pre-chat fields
   * given update the visitor). Otherwise a new visitor is made, within the per-IP limit, with the
   * required pre-chat fields. With identity verification on, every call carries `{identifier,
   * signature}` (hex HMAC-SHA256 of the identifier with the widget secret) or is refused (403);
   * the identifier is the visitor, whatever browser it comes from.
   */
  async startSession(input: SessionInput, req: VisitorRequest): Promise<SessionResult> {
    await this.limit(this.sessionCallsPerIp, `ip:${req.ip}`);
    const { row: integration, settings } = await this.widgetForKey(input.key, req);
    const fields = checkProfileFields(input);
    const now = this.deps.clock.now();

    let identifier: string | null = null;
    if (settings.identityVerification) {
      identifier = this.verifiedIdentifier(integration, input);
    }

    if (input.token) {
      const found = await repo.findVisitorByToken(this.db, hashToken(input.token));
      if (found && found.integration_id === integration.id && found.identifier === identifier) {
        const visitor = await repo.updateVisitor(this.db, found.id, { ...fields, last_seen_at: now });
        await repo.touchSession(this.db, found.session_id, now);
        return { token: input.token, resumed: true, visitor: profileOf(visitor), widget: publicConfig(integration.external_id, settings) };
      }
    }

    let visitor = identifier === null ? undefined : await repo.findVisitor(this.db, integration.id, verifiedPublicId(identifier));
    if (visitor) {
      if (Object.keys(fields).length) visitor = await repo.updateVisitor(this.db, visitor.id, { ...fields, last_seen_at: now });
    } else {
      const missing = PRE_CHAT_FIELDS.filter((f) => settings.preChat[f] === 'required' && !fields[f]);
      if (missing.length) {
        throw new AppError(
          400,
          'prechat_required',
          `Please fill in: ${missing.join(', ')}`,
          missing.map((f) => ({ path: `body.${f}`, message: 'is required' })),
        );
      }
      await this.limit(this.newSessionsPerIp, `ip:${req.ip}`);
    }
    const token = `wvt_${crypto.randomBytes(32).toString('base64url')}`;
    visitor = await this.db.transaction().execute(async (trx) => {
      const row =
        visitor ??
        (await repo.insertVisitor(trx, {
          account_id: integration.account_id,
          integration_id: integration.id,
          public_id: identifier === null ? `v_${crypto.randomBytes(12).toString('base64url')}` : verifiedPublicId(identifier),
          identifier,
          name: fields.name ?? '',
          email: fields.email ?? '',
          phone: fields.phone ?? '',
          created_at: now,
          last_seen_at: now,
        }));
      await repo.insertSession(trx, row.id, hashToken(token), now);
      return row;
    });
    return { token, resumed: false, visitor: profileOf(visitor), widget: publicConfig(integration.external_id, settings) };
  }

  private verifiedIdentifier(integration: IntegrationRow, input: SessionInput): string {
    const identifier = input.identifier;
    const signature = input.signature?.toLowerCase();
    if (!identifier || !signature) throw new AppError(403, 'identity_required', 'This widget needs a verified identity (identifier and signature)');
    const secret = this.parts.integrations.channelIntegration(integration).credentials.secret;
    const expected = secret ? crypto.createHmac('sha256', secret).update(identifier, 'utf8').digest() : undefined;
    const given = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : undefined;
    if (!expected || !given || !crypto.timingSafeEqual(expected, given)) {
      throw new AppError(403, 'identity_invalid', 'The identity signature is not valid');
    }
    return identifier;
  }

  /** The visitor of a token, on a live widget the request's origin may use; 401 otherwise. */
  async authenticate(token: string | undefined, req: Pick<VisitorRequest, 'origin' | 'selfOrigin'>): Promise<Visitor> {
    const found = token && token.length <= 200 ? await repo.findVisitorByToken(this.db, hashToken(token)) : undefined;
    const integration = found && (await findIntegration(this.db, found.account_id, found.integration_id));
    if (!found || !integration || integration.status !== 'active') throw new AppError(401, 'unauthorized', 'Unknown or expired visitor session');
    const settings = widgetSettingsOf(parseSettings(integration.settings));
    this.checkOrigin(settings, req);
    const { session_id: _session, ...row } = found;
    return { row, integration, settings };
  }

  /**
   * A visitor's message: through the ingest pipeline (customer with a `widget` profile, `message`
   * channel, lead, events). `clientId` makes retries idempotent. Text or an uploaded file (or
   * both); empty -> 400; over the rate limits -> 429; nothing is stored for a refusal.
   */
  async sendMessage(visitor: Visitor, input: { clientId: string; text?: string; fileId?: string }, ip: string): Promise<VisitorMessage> {
    const text = (input.text ?? '').trim();
    if (!CLIENT_ID.test(input.clientId)) throw invalid('clientId must be 1-64 letters, digits, _ or -', [{ path: 'body.clientId', message: 'is invalid' }]);
    if (text.length > LIMITS.text) throw invalid(`The message is longer than ${LIMITS.text} characters`, [{ path: 'body.text', message: 'is too long' }]);
    if (!text && !input.fileId) throw invalid('The message is empty', [{ path: 'body.text', message: 'is required without an attachment' }]);
    await this.limit(this.messagesPerVisitor, `visitor:${visitor.row.id}`);
    await this.limit(this.messagesPerIp, `ip:${ip}`);
    const { row, integration } = visitor;
    const externalId = `${row.public_id}:${input.clientId}`;
    const again = await repo.messageByExternalId(this.db, integration.id, externalId);
    if (again) return presentVisitorMessage(again);

    const attachments: Attachment[] = [];
    if (input.fileId) {
      const file = await this.parts.files.get(integration.account_id, input.fileId);
      if (!file) throw invalid('Unknown attachment', [{ path: 'body.fileId', message: 'is not an uploaded file' }]);
      attachments.push(this.parts.files.attachmentOf(file, uploadTypeOf(file.mime)));
    }
    const now = this.deps.clock.now();
    const result = await this.parts.ingest.ingest(integration, {
      externalId,
      datetime: now,
      sender: { socialId: row.public_id, name: row.name || `Visitor ${row.public_id.slice(-6)}`, login: row.email },
      channel: { externalId: row.public_id, type: 'message', name: row.name || null },
      text,
      attachments,
    });
    if (result.isNewCustomer) await this.fillCustomerContacts(integration, row);
    // `last_seen_at` is kept to the minute: a write (and commit) per message would double the
    // cost of a conversation for a figure nobody reads at millisecond precision.
    if (now - row.last_seen_at >= LAST_SEEN_RESOLUTION_MS) await repo.updateVisitor(this.db, row.id, { last_seen_at: now });
    return { id: externalId, from: 'visitor', text, attachments: visitorAttachments(attachments), at: now };
  }

  /** A new customer gets the e-mail and phone of the pre-chat form (`customer.changed`). */
  private async fillCustomerContacts(integration: IntegrationRow, visitor: WidgetVisitorRow): Promise<void> {
    if (!visitor.email && !visitor.phone) return;
    await this.db.transaction().execute(async (trx) => {
      const profile = await trx
        .selectFrom('profiles')
        .select('customer_id')
        .where('integration_id', '=', integration.id)
        .where('social_id', '=', visitor.public_id)
        .executeTakeFirst();
      if (!profile) return;
      const customer = await trx
        .updateTable('customers')
        .set({ email: visitor.email || null, phone: visitor.phone || null, updated_at: this.deps.clock.now() })
        .where('id', '=', profile.customer_id)
        .where('email', 'is', null)
        .where('phone', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!customer) return;
      const profiles = await listProfiles(trx, customer.account_id, customer.id);
      await recordEvent(
        trx,
        { accountId: customer.account_id, type: 'customer.changed', payload: { customerId: customer.id, customer: customerView(customer, profiles) } },
        this.deps.clock.now(),
      );
    });
  }

  /** The visitor's own conversation, newest page first (`before`: the `cursor` of the previous page). */
  async history(visitor: Visitor, before: number | undefined): Promise<{ messages: VisitorMessage[]; cursor: number }> {
    const source = await repo.visitorSource(this.db, visitor.integration.id, visitor.row.public_id);
    if (!source) return { messages: [], cursor: -1 };
    const rows = await repo.historyRows(this.db, source.id, before, HISTORY_PAGE);
    const page = rows.slice(0, HISTORY_PAGE);
    return {
      messages: page.reverse().map(presentVisitorMessage),
      cursor: rows.length > HISTORY_PAGE ? page[0].id : -1,
    };
  }

  /**
   * A visitor's attachment: the upload rules of FilesService (type sniffed, script types refused
   * 415) under the widget's own, smaller size limit (413).
   */
  async upload(visitor: Visitor, stream: Readable, meta: { filename?: string; mime: string }, ip: string): Promise<StoredFile> {
    await this.limit(this.uploadsPerVisitor, `visitor:${visitor.row.id}`);
    await this.limit(this.messagesPerIp, `ip:${ip}`);
    return this.parts.files.store(visitor.integration.account_id, capped(stream, this.maxUploadBytes), meta);
  }

  get maxUploadBytes(): number {
    return Math.min(this.deps.config.widgetUploadLimit, this.deps.config.uploadLimit);
  }

  /** The demo page's widget: the installation's first one (its public key only). */
  async demoWidget(): Promise<{ key: string; identityVerification: boolean; allowedOrigins: string[] } | undefined> {
    const row = await repo.firstWidget(this.db);
    if (!row) return undefined;
    const settings = widgetSettingsOf(parseSettings(row.settings));
    return { key: row.external_id, identityVerification: settings.identityVerification, allowedOrigins: settings.allowedOrigins };
  }

  private async limit(limiter: RateLimiter, key: string): Promise<void> {
    const wait = await limiter.hit(key);
    if (wait) throw rateLimited(wait, 'Too many requests, slow down');
  }
}

export function snippetOf(scriptUrl: string, key: string): string {
  return `<script src="${escapeAttr(scriptUrl)}" data-parley-key="${escapeAttr(key)}" async></script>`;
}

export function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#39;');
}

const hashToken = (token: string) => crypto.createHash('sha256').update(token, 'utf8').digest('hex');
const verifiedPublicId = (identifier: string) => `u_${identifier}`;

function profileOf(v: WidgetVisitorRow): VisitorProfile {
  return { id: v.public_id, name: v.name, email: v.email, phone: v.phone, verified: v.identifier !== null };
}

export function presentVisitorMessage(m: { external_id: string | null; id: number; incoming: number; text: string; attachments: string; created_at: number }): VisitorMessage {
  return {
    id: m.external_id ?? `m${m.id}`,
    from: m.incoming ? 'visitor' : 'agent',
    text: m.text,
    attachments: visitorAttachments(JSON.parse(m.attachments) as Attachment[]),
    at: m.created_at,
  };
}

/** The pre-chat fields given, trimmed and checked (400 listing the bad ones). */
function checkProfileFields(input: SessionInput): Partial<Record<'name' | 'email' | 'phone', string>> {
  const out: Partial<Record<'name' | 'email' | 'phone', string>> = {};
  const details: { path: string; message: string }[] = [];
  const name = input.name?.trim();
  if (name) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with control characters is refused
    if (name.length > LIMITS.name || /[\u0000-\u001f\u007f]/.test(name)) details.push({ path: 'body.name', message: 'is not a valid name' });
    else out.name = name;
  }
  const email = input.email?.trim();
  if (email) {
    if (email.length > LIMITS.email || !EMAIL.test(email)) details.push({ path: 'body.email', message: 'is not a valid e-mail address' });
    else out.email = email;
  }
  const phone = input.phone?.trim();
  if (phone) {
    if (!PHONE.test(phone)) details.push({ path: 'body.phone', message: 'is not a valid phone number' });
    else out.phone = phone;
  }
  if (details.length) throw invalid('Please check the form', details);
  return out;
}

/** The stream, failing with 413 past `max` bytes (FilesService then keeps nothing). */
async function* capped(source: Readable, max: number): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > max) throw new AppError(413, 'payload_too_large', `The file is larger than the widget upload limit of ${max} bytes`);
    yield chunk;
  }
}
