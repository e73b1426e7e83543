import type { Executor } from '../../db/database.js';
import { presentSource, type SourceObject } from '../conversations/history-message.js';
import { leadScopeSql, type Scope } from '../policy/policy.js';
import { groupBy } from '../group-by.js';

/** One lead's channels, as `GET /v1.3/messaging/<id>/sources` answers them. */
export interface LeadSources {
  leadId: number;
  sources: SourceObject[];
}

/**
 * The channels of several leads at once (`GET /v1.3/messaging/sources?lead=`, docs/api/messaging.md):
 * for each of `leadIds` the caller sees, in the order asked, what the single-lead route answers; the
 * others are left out. Three queries whatever the count: a client reading a whole account asks for
 * 200 leads' channels in one request instead of one each.
 */
export async function sourcesOfLeads(db: Executor, scope: Scope, leadIds: number[]): Promise<LeadSources[]> {
  if (!leadIds.length) return [];
  let query = db
    .selectFrom('leads')
    .select(['id', 'customer_id', 'integration_id'])
    .where('id', 'in', leadIds)
    .where('account_id', '=', scope.accountId);
  const rule = leadScopeSql(scope);
  if (rule) query = query.where(rule);
  const leads = new Map((await query.execute()).map((l) => [l.id, l]));
  if (!leads.size) return [];
  const found = [...leads.values()];
  // A lead's channels are its customer's on its integration (messaging.repo.ts leadSources).
  const integrations = new Map(
    (
      await db
        .selectFrom('integrations')
        .select(['id', 'identifier'])
        .where('id', 'in', [...new Set(found.map((l) => l.integration_id))])
        .where('account_id', '=', scope.accountId)
        .execute()
    ).map((i) => [i.id, i]),
  );
  const rows = await db
    .selectFrom('sources')
    .selectAll()
    .where('customer_id', 'in', [...new Set(found.map((l) => l.customer_id))])
    .where('account_id', '=', scope.accountId)
    .orderBy('id')
    .execute();
  const byPair = groupBy(rows, (row) => `${row.customer_id}:${row.integration_id}`);
  return leadIds.flatMap((id) => {
    const lead = leads.get(id);
    const integration = lead && integrations.get(lead.integration_id);
    if (!lead || !integration) return [];
    const sources = byPair.get(`${lead.customer_id}:${lead.integration_id}`) ?? [];
    return [{ leadId: id, sources: sources.map((s) => presentSource(s, integration)) }];
  });
}
