import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { latestLead } from '../conversations/conversations.repo.js';
import { joinsLatestLead } from '../conversations/lead-lifecycle.js';
import { invalid } from '../errors.js';
import { findIntegration } from '../integrations/integrations.repo.js';
import { leadSources } from '../messaging/messaging.repo.js';
import { scopeOf, visibleLead } from '../policy/policy.js';
import type { Visitor } from './widget-sessions.js';
import * as repo from './widget.repo.js';
import { WIDGET_TYPE } from './widget.types.js';

/** While a visitor keeps typing, `typing: true` is recorded again at most this often. */
export const VISITOR_TYPING_REPEAT_MS = 3_000;
/** Visitors whose last typing state this process remembers, at most (the oldest are forgotten). */
const REMEMBERED_VISITORS = 10_000;

/**
 * Typing indicators of widget conversations, both ways, through the outbox like everything else
 * that leaves Parley (docs/architecture.md): each one is an internal event (no webhook receives it,
 * it is never replayed), recorded once and read after commit by whichever process holds the
 * sockets. An employee's typing (`widget.typing`) reaches the visitor's open tabs (visitor-push/);
 * a visitor's typing (`widget.visitor.typing`) reaches the employees' realtime streams that may see
 * the lead (realtime/).
 */
export class WidgetTyping {
  /** Per visitor of this process (its sockets are here): the last state recorded, and when. */
  private readonly visitors = new Map<number, { typing: boolean; at: number }>();

  constructor(private readonly deps: Deps) {}

  private get db() {
    return this.deps.db.kysely;
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

  /**
   * A visitor's `{type:"typing", typing}` socket message. It concerns the conversation the visitor's
   * next message would join (docs/api/leads.md); a visitor without one (nothing written yet, or the
   * last lead archived) has nobody to show it to, and nothing is recorded. While typing goes on, one
   * `typing: true` per VISITOR_TYPING_REPEAT_MS is recorded; `typing: false` only after a `true`.
   * Answers whether an event was recorded.
   */
  async visitorTyping(visitor: Visitor, typing: boolean): Promise<boolean> {
    const now = this.deps.clock.now();
    const last = this.visitors.get(visitor.row.id);
    if (typing ? last?.typing && now - last.at < VISITOR_TYPING_REPEAT_MS : !last?.typing) return false;
    this.remember(visitor.row.id, { typing, at: now });
    const { integration, row } = visitor;
    const customerId = await repo.visitorCustomerId(this.db, integration.id, row.public_id);
    const lead = customerId === undefined ? undefined : await latestLead(this.db, customerId, integration.id);
    if (!lead || !joinsLatestLead(lead)) return false;
    const payload = { leadId: lead.id, integrationId: integration.id, visitorId: row.public_id, typing };
    await this.db
      .transaction()
      .execute((trx) => recordEvent(trx, { accountId: lead.account_id, type: 'widget.visitor.typing', leadId: lead.id, payload }, now));
    return true;
  }

  /** The visitor's last socket closed: a later `typing` starts afresh. */
  forgetVisitor(visitorId: number): void {
    this.visitors.delete(visitorId);
  }

  private remember(visitorId: number, state: { typing: boolean; at: number }): void {
    this.visitors.delete(visitorId);
    this.visitors.set(visitorId, state);
    if (this.visitors.size <= REMEMBERED_VISITORS) return;
    const oldest = this.visitors.keys().next();
    if (!oldest.done) this.visitors.delete(oldest.value);
  }
}
