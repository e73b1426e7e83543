import type { Executor } from '../../db/database.js';
import type { IntegrationRow } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import { isBridgeType } from '../bridge/bridge-types.js';
import type { Deps } from '../context.js';
import { credentialsRefused, type HealthCode, type HealthError } from '../channels/health-messages.js';
import { deliveryMode, type DeliveryMode } from '../channels/networks.js';

/** The v1.3 `health` of an integration (docs/api/integrations.md "Health"); times in Unix ms. */
export interface HealthView {
  lastInboundAt: number | null;
  lastOutboundAt: number | null;
  lastError: { at: number; code: HealthCode; message: string } | null;
  mode: DeliveryMode;
}

/**
 * Activity is written at most this often per integration and direction by one process: the
 * message paths pay one small upsert per integration every few seconds, not one per message.
 */
const ACTIVITY_EVERY_MS = 10_000;

type Direction = 'last_inbound_at' | 'last_outbound_at';

/**
 * Keeps each integration's health: when it last received and sent, and its last failure (set by a
 * refused connect, a refused token, a webhook refusal, a failed send or a lost bridge session;
 * cleared by the next success). Health is bookkeeping: its writes never fail the work they describe.
 */
export class IntegrationHealth {
  /** `<id>:<direction>` -> when this process last wrote it. */
  private readonly written = new Map<string, number>();
  /** Integrations this process recorded a failure for, until a success clears it. */
  private readonly failing = new Set<number>();

  constructor(private readonly deps: Deps) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /** A customer's message was stored. */
  inbound(row: IntegrationRow): Promise<void> {
    return this.succeeded(row, 'last_inbound_at');
  }

  /** The provider accepted a message. */
  outbound(row: IntegrationRow): Promise<void> {
    return this.succeeded(row, 'last_outbound_at');
  }

  /** The integration works again (a bridge logged in, credentials updated): its last error is cleared. */
  async recovered(row: IntegrationRow): Promise<void> {
    await this.quietly(row.id, () => this.clear(row, this.deps.clock.now()));
  }

  /** Records a failure of the integration (never throws); a new error is told to the app's live streams. */
  async failed(integrationId: number, error: HealthError): Promise<void> {
    await this.quietly(integrationId, async () => {
      await this.db.transaction().execute(async (trx) => {
        const before = await trx
          .selectFrom('integrations')
          .select(['account_id', 'last_error', 'last_error_code'])
          .where('id', '=', integrationId)
          .executeTakeFirst();
        if (!before) return;
        await trx
          .updateTable('integrations')
          .set({ last_error_at: this.deps.clock.now(), last_error: error.message, last_error_code: error.code })
          .where('id', '=', integrationId)
          .execute();
        // A send failing again the same way changes nothing the owner sees: no event per failed message.
        if (before.last_error !== error.message || before.last_error_code !== error.code) {
          await this.changed(trx, before.account_id, integrationId);
        }
      });
      this.failing.add(integrationId);
    });
  }

  /** The provider refused the credentials of a connected integration: `auth failure` with the refusal as its last error. */
  async credentialsRefused(integrationId: number, reason: string): Promise<boolean> {
    const row = await this.db.selectFrom('integrations').select(['type', 'account_id']).where('id', '=', integrationId).executeTakeFirst();
    if (!row) return false;
    const error = credentialsRefused(row.type, reason);
    const changed = await this.db.transaction().execute(async (trx) => {
      const updated = await trx
        .updateTable('integrations')
        .set({ status: 'auth failure', last_error_at: this.deps.clock.now(), last_error: error.message, last_error_code: error.code })
        .where('id', '=', integrationId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      const done = Number(updated.numUpdatedRows) > 0;
      if (done) await this.changed(trx, row.account_id, integrationId);
      return done;
    });
    this.failing.add(integrationId);
    return changed;
  }

  /** The integration's status changed outside these methods (a bridge came or went): the live streams are told (never throws). */
  async statusChanged(integrationId: number): Promise<void> {
    await this.quietly(integrationId, async () => {
      const row = await this.db.selectFrom('integrations').select('account_id').where('id', '=', integrationId).executeTakeFirst();
      if (row) await this.db.transaction().execute((trx) => this.changed(trx, row.account_id, integrationId));
    });
  }

  /**
   * Tells the account's live streams (docs/api/webhooks.md "The realtime stream") that the integration's status or health
   * changed, in the transaction of the change: employees who may use it see it without reloading.
   */
  async changed(trx: Executor, accountId: number, integrationId: number): Promise<void> {
    await recordEvent(trx, { accountId, type: 'integration.changed', payload: { integrationId } }, this.deps.clock.now());
  }

  /** The health of each row, read in one query. */
  async views(rows: IntegrationRow[]): Promise<Map<number, HealthView>> {
    const ids = rows.map((r) => r.id);
    const activity = ids.length
      ? await this.db.selectFrom('integration_activity').selectAll().where('integration_id', 'in', ids).execute()
      : [];
    const byId = new Map(activity.map((a) => [Number(a.integration_id), a]));
    const hasPublicUrl = Boolean(this.deps.config.publicUrl);
    return new Map(
      rows.map((row) => {
        const seen = byId.get(row.id);
        const view: HealthView = {
          lastInboundAt: seen?.last_inbound_at == null ? null : Number(seen.last_inbound_at),
          lastOutboundAt: seen?.last_outbound_at == null ? null : Number(seen.last_outbound_at),
          lastError:
            row.last_error_at == null || row.last_error == null
              ? null
              : { at: Number(row.last_error_at), code: (row.last_error_code ?? 'provider_failed') as HealthCode, message: row.last_error },
          mode: deliveryMode(row.type, hasPublicUrl),
        };
        return [row.id, view];
      }),
    );
  }

  /** Notes the activity (throttled) and clears a failure the success answers. */
  private async succeeded(row: IntegrationRow, direction: Direction): Promise<void> {
    await this.quietly(row.id, async () => {
      const now = this.deps.clock.now();
      const key = `${row.id}:${direction}`;
      const last = this.written.get(key);
      if (last === undefined || now - last >= ACTIVITY_EVERY_MS || now < last) {
        this.written.set(key, now);
        await this.db
          .insertInto('integration_activity')
          .values({ integration_id: row.id, [direction]: now })
          .onConflict((oc) => oc.column('integration_id').doUpdateSet({ [direction]: now }))
          .execute();
      }
      if (row.last_error_at != null || this.failing.has(row.id)) await this.clear(row, now);
    });
  }

  /** A success: the last error is gone and a refused (non-bridge) integration works again. */
  private async clear(row: IntegrationRow, now: number): Promise<void> {
    this.failing.delete(row.id);
    await this.db.transaction().execute(async (trx) => {
      const cleared = await trx
        .updateTable('integrations')
        .set({ last_error_at: null, last_error: null, last_error_code: null })
        .where('id', '=', row.id)
        .where('last_error_at', '<=', now)
        .executeTakeFirst();
      const revived = isBridgeType(row.type)
        ? undefined
        : await trx
            .updateTable('integrations')
            .set({ status: 'active' })
            .where('id', '=', row.id)
            .where('status', '=', 'auth failure')
            .where('deleted_at', 'is', null)
            .executeTakeFirst();
      if (Number(cleared.numUpdatedRows) > 0 || Number(revived?.numUpdatedRows ?? 0) > 0) {
        await this.changed(trx, row.account_id, row.id);
      }
    });
  }

  private async quietly(integrationId: number, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.deps.log.warn({ err, integrationId }, 'integration health not recorded');
    }
  }
}
