import crypto from 'node:crypto';
import type { IntegrationRow } from '../../db/schema.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid, notFound } from '../errors.js';
import { findIntegration, updateIntegration } from '../integrations/integrations.repo.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import type { ConnectInput } from '../integrations/integrations.types.js';
import { parseSettings } from '../integrations/integrations.types.js';
import { requireOwner } from '../policy/policy.js';
import { applyWidgetSettings, DEFAULT_WIDGET_SETTINGS, pick, WIDGET_TYPE, widgetSettingsOf, type WidgetAdminView } from './widget.types.js';

export const KEY = /^wk_[A-Za-z0-9_-]{8,64}$/;

/** The site widget for owners: the connect input of a widget, its settings, snippet and secret. */
export class WidgetAdmin {
  constructor(
    private readonly deps: Deps,
    private readonly integrations: IntegrationsService,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

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
    return {
      ...input,
      settings: { ...given, ...settings },
      credentials: { secret: `wsec_${crypto.randomBytes(32).toString('base64url')}` },
    };
  }

  /** The owner's view of a widget integration (the secret included). */
  adminView(row: IntegrationRow, base: string): WidgetAdminView {
    const integration = this.integrations.channelIntegration(row);
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
}

export function snippetOf(scriptUrl: string, key: string): string {
  return `<script src="${escapeAttr(scriptUrl)}" data-parley-key="${escapeAttr(key)}" async></script>`;
}

export function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/'/g, '&#39;');
}
