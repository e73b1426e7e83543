import crypto from 'node:crypto';
import type { IntegrationRow, WidgetVisitorRow } from '../../db/schema.js';
import type { RateLimiter } from '../auth/rate-limiter.js';
import type { Deps } from '../context.js';
import { AppError, invalid } from '../errors.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import { integrationCache } from '../integrations/integration-cache.js';
import { parseSettings } from '../integrations/integrations.types.js';
import { KEY } from './widget-admin.js';
import { limit } from './widget-limits.js';
import { SessionCache } from './session-cache.js';
import * as repo from './widget.repo.js';
import {
  EMAIL,
  LIMITS,
  normalizeOrigin,
  PHONE,
  PRE_CHAT_FIELDS,
  publicConfig,
  widgetSettingsOf,
  type PublicWidgetConfig,
  type SessionInput,
  type SessionResult,
  type VisitorProfile,
  type WidgetSettings,
} from './widget.types.js';

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

/**
 * The visitors' sessions of the public widget protocol: the widget of a key under its allowed
 * origins, its public config, starting and resuming sessions (pre-chat fields, identity
 * verification) and authenticating a visitor token.
 */
export class WidgetSessions {
  /** Sessions' visitors kept for the visitors' requests (PostgreSQL; see SessionCache). */
  readonly kept: SessionCache;

  constructor(
    private readonly deps: Deps,
    private readonly integrations: IntegrationsService,
    private readonly limits: { newSessionsPerIp: RateLimiter; sessionCallsPerIp: RateLimiter },
  ) {
    this.kept = new SessionCache(deps.db, integrationCache(deps.db));
  }

  private get db() {
    return this.deps.db.kysely;
  }

  /** Whether `publicId` is a visitor of the widget: every send to a widget lead asks (kept on PostgreSQL). */
  async visitorExists(integrationId: number, publicId: string): Promise<boolean> {
    return (await this.kept.visitor(integrationId, publicId)) !== undefined;
  }

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
    await limit(this.limits.sessionCallsPerIp, `ip:${req.ip}`);
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
    await limit(this.limits.sessionCallsPerIp, `ip:${req.ip}`);
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
      await limit(this.limits.newSessionsPerIp, `ip:${req.ip}`);
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
    if (!identifier || !signature)
      throw new AppError(403, 'identity_required', 'This widget needs a verified identity (identifier and signature)');
    const secret = this.integrations.channelIntegration(integration).credentials.secret;
    const expected = secret ? crypto.createHmac('sha256', secret).update(identifier, 'utf8').digest() : undefined;
    const given = /^[0-9a-f]{64}$/.test(signature) ? Buffer.from(signature, 'hex') : undefined;
    if (!expected || !given || !crypto.timingSafeEqual(expected, given)) {
      throw new AppError(403, 'identity_invalid', 'The identity signature is not valid');
    }
    return identifier;
  }

  /** The visitor of a token, on a live widget the request's origin may use; 401 otherwise. */
  async authenticate(token: string | undefined, req: Pick<VisitorRequest, 'origin' | 'selfOrigin'>): Promise<Visitor> {
    const found = token && token.length <= 200 ? await this.kept.find(hashToken(token)) : undefined;
    if (found?.integration.status !== 'active') throw new AppError(401, 'unauthorized', 'Unknown or expired visitor session');
    const { visitor: row, integration } = found;
    const settings = widgetSettingsOf(parseSettings(integration.settings));
    this.checkOrigin(settings, req);
    return { row, integration, settings };
  }

  /** The demo page's widget: the installation's first one (its public key only). */
  async demoWidget(): Promise<{ key: string; identityVerification: boolean; allowedOrigins: string[] } | undefined> {
    const row = await repo.firstWidget(this.db);
    if (!row) return undefined;
    const settings = widgetSettingsOf(parseSettings(row.settings));
    return { key: row.external_id, identityVerification: settings.identityVerification, allowedOrigins: settings.allowedOrigins };
  }
}

const hashToken = (token: string) => crypto.createHash('sha256').update(token, 'utf8').digest('hex');
const verifiedPublicId = (identifier: string) => `u_${identifier}`;

function profileOf(v: WidgetVisitorRow): VisitorProfile {
  return { id: v.public_id, name: v.name, email: v.email, phone: v.phone, verified: v.identifier !== null };
}

/** The pre-chat fields given, trimmed and checked (400 listing the bad ones). */
function checkProfileFields(input: SessionInput): Partial<Record<'name' | 'email' | 'phone', string>> {
  const out: Partial<Record<'name' | 'email' | 'phone', string>> = {};
  const details: { path: string; message: string }[] = [];
  const name = input.name?.trim();
  if (name) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a name with control characters is refused
    if (name.length > LIMITS.name || /[\u0000-\u001f\u007f]/.test(name))
      details.push({ path: 'body.name', message: 'is not a valid name' });
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
