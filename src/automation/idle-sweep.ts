import { sql } from 'kysely';
import type { Deps } from '../domain/context.js';
import { recordEvent } from '../events/outbox.js';

const PER_RULE = 200;

/**
 * `lead.idle` rules: finds the open leads (inbox and active statuses) whose last message is older
 * than the rule's `idleMinutes`, and records an internal `lead.idle` event per rule, lead and quiet
 * spell (claimed in `automation_claims` by the lead's last message time, in the event's
 * transaction), which the automation consumer then runs for that rule only. A new message starts
 * a new spell.
 */
export async function sweepIdleLeads(deps: Deps): Promise<number> {
  const db = deps.db.kysely;
  const now = deps.clock.now();
  const rules = await db.selectFrom('automation_rules').selectAll().where('enabled', '=', 1).where('event', '=', 'lead.idle').execute();
  let recorded = 0;
  for (const rule of rules) {
    if (rule.idle_minutes === null) continue;
    const leads = await db
      .selectFrom('leads')
      .select(['id', 'last_message_at'])
      .where('account_id', '=', rule.account_id)
      .where('status_type', 'in', ['inbox', 'active'])
      .where('last_message_at', '<=', now - rule.idle_minutes * 60_000)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('automation_claims as c')
              .select('c.event_id')
              .where('c.consumer', '=', sql<string>`${`idle-${rule.id}-`} || cast(leads.id as text)`)
              .whereRef('c.event_id', '=', 'leads.last_message_at'),
          ),
        ),
      )
      .orderBy('last_message_at')
      .limit(PER_RULE)
      .execute();
    for (const lead of leads) {
      await db.transaction().execute(async (trx) => {
        const claimed = await trx
          .insertInto('automation_claims')
          .values({ consumer: `idle-${rule.id}-${lead.id}`, event_id: lead.last_message_at, created_at: now })
          .onConflict((oc) => oc.columns(['consumer', 'event_id']).doNothing())
          .returning('event_id')
          .execute();
        if (!claimed.length) return;
        await recordEvent(
          trx,
          { accountId: rule.account_id, type: 'lead.idle', leadId: lead.id, payload: { leadId: lead.id, ruleId: rule.id } },
          now,
        );
        recorded++;
      });
    }
  }
  return recorded;
}
