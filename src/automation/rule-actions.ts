import { dialectOf, type Executor } from '../db/database.js';
import type { LeadRow } from '../db/schema.js';
import type { AuthContext } from '../domain/auth/auth-context.js';
import { distributeLead } from '../domain/automation/distribution.js';
import type { Action } from '../domain/automation/rules.types.js';
import { eventPayloadText, eventsInserted, recordEvent, type NewEvent } from '../events/outbox.js';
import { presentLead } from '../domain/leads/lead-presenter.js';
import { recordLeadChange } from '../domain/leads/lead-events.js';
import { changedLeadFields } from '../domain/leads/lead-fields.js';
import { attachTag, attachTags, detachTag, updateLead } from '../domain/leads/leads.repo.js';
import { attachTagsRecording } from './automation.repo.js';
import { insertNote } from '../domain/notes/notes.repo.js';
import { presentNote } from '../domain/notes/notes.service.js';
import { findStatus } from '../domain/statuses/statuses.repo.js';
import { ensureTag, findTag, findTags } from '../domain/tags/tags.repo.js';
import type { TagRow } from '../domain/tags/tags.types.js';
import { findUser } from '../domain/users/users.repo.js';

/** Sends a reply to the lead's channel as an employee's answer would go (messaging's send). */
export type ReplySender = (auth: AuthContext, leadId: number, input: { message: { text: string }; customId: string }) => Promise<unknown>;

export type DatabaseAction = Exclude<Action, { type: 'reply' }>;

/**
 * The account's tags a transaction found or created, by `<accountId>:<tag>`: ten rules tagging
 * each message look each tag up once per transaction. Valid only inside that transaction.
 */
export type TagCache = Map<string, TagRow>;

/**
 * The lead as it is, locked for the rest of the transaction on PostgreSQL (SQLite runs one writer
 * at a time already); undefined when it no longer exists.
 */
export async function lockedLead(trx: Executor, leadId: number): Promise<LeadRow | undefined> {
  let query = trx.selectFrom('leads').selectAll().where('id', '=', leadId);
  if (dialectOf(trx) === 'postgres') query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * The existing tags among `wanted` (account and value), found in one statement per account and
 * kept in `tags` for {@link tagToAdd}: a chunk's runs adding ten tags cost one look-up, not ten.
 */
export async function findTagsToAdd(trx: Executor, wanted: Map<number, Set<string>>, tags: TagCache): Promise<void> {
  for (const [accountId, values] of wanted) {
    const missing = [...values].filter((tag) => !tags.has(`${accountId}:${tag}`));
    for (const row of await findTags(trx, accountId, missing)) tags.set(`${accountId}:${row.tag}`, row);
  }
}

/**
 * The tag of an `addTag`, found or created once per transaction (`tags`): what
 * {@link attachTagsAtOnce} attaches.
 */
export async function tagToAdd(trx: Executor, lead: LeadRow, tag: string, now: number, tags: TagCache): Promise<TagRow> {
  const key = `${lead.account_id}:${tag}`;
  const row = tags.get(key) ?? (await ensureTag(trx, lead.account_id, tag, now));
  tags.set(key, row);
  return row;
}

/**
 * The tags several `addTag` actions of one event's runs add to a lead, attached in one statement
 * with one `lead.changed` (`changes: ["tags"]`), as an employee setting several tags at once
 * records: ten rules tagging a new lead cost ten statements fewer each. Answers the lead after.
 */
export async function attachTagsAtOnce(trx: Executor, lead: LeadRow, tagIds: number[], now: number): Promise<LeadRow> {
  if (!(await attachTags(trx, lead.account_id, lead.id, [...new Set(tagIds)], now))) return lead;
  const after = await updateLead(trx, lead.account_id, lead.id, { updated_at: now });
  await recordLeadChange(trx, lead, after, ['tags'], now);
  return after;
}

/**
 * {@link attachTagsAtOnce} for several leads (locked, one event's new tags each) in one statement on
 * PostgreSQL: the tags attached, each lead that gained one updated, and its `lead.changed`
 * (`changes: ["tags"]`) recorded, in the order given. Answers the leads after, by id.
 */
export async function attachTagsOfLeads(
  trx: Executor,
  items: Array<{ lead: LeadRow; tagIds: number[] }>,
  now: number,
): Promise<Map<number, LeadRow>> {
  const out = new Map<number, LeadRow>();
  const wanted = items.filter((i) => i.tagIds.length);
  if (dialectOf(trx) !== 'postgres' || wanted.length < 2) {
    for (const { lead, tagIds } of wanted) out.set(lead.id, await attachTagsAtOnce(trx, lead, tagIds, now));
    return out;
  }
  const pairs = wanted.flatMap(({ lead, tagIds }) => [...new Set(tagIds)].map((tagId) => ({ lead, tagId })));
  const events: NewEvent[] = wanted.map(({ lead }) => ({
    accountId: lead.account_id,
    type: 'lead.changed',
    leadId: lead.id,
    payload: { leadId: lead.id, changes: ['tags'], lead: presentLead({ ...lead, updated_at: now }) },
  }));
  const { eventIds, hooks, ords } = await attachTagsRecording(trx, {
    tags: pairs.map((p) => ({ accountId: p.lead.account_id, leadId: p.lead.id, tagId: p.tagId })),
    events: events.map((e) => ({ accountId: e.accountId, leadId: e.leadId as number, payload: eventPayloadText(e) })),
    now,
  });
  for (const ord of ords) {
    const { lead } = wanted[ord - 1];
    out.set(lead.id, { ...lead, updated_at: now });
  }
  await eventsInserted(
    trx,
    ords.map((ord) => events[ord - 1]),
    eventIds,
    hooks,
    now,
  );
  return out;
}

/**
 * One database action of a rule on `lead` (read with {@link lockedLead} in this transaction), in
 * the caller's transaction (with the run's progress, so it happens exactly once). Each records the
 * ordinary events of the change it makes. Answers the lead as it is afterwards.
 */
export async function applyLeadAction(
  trx: Executor,
  action: DatabaseAction,
  lead: LeadRow,
  text: string,
  now: number,
  tags: TagCache = new Map(),
): Promise<LeadRow> {
  const change = async (cols: Partial<LeadRow>) => {
    const after = await updateLead(trx, lead.account_id, lead.id, { ...cols, updated_at: now });
    await recordLeadChange(trx, lead, after, changedLeadFields(lead, after), now);
    return after;
  };
  const tagsChanged = async () => {
    const after = await updateLead(trx, lead.account_id, lead.id, { updated_at: now });
    await recordLeadChange(trx, lead, after, ['tags'], now);
    return after;
  };
  switch (action.type) {
    case 'assign': {
      const user = await findUser(trx, lead.account_id, action.userId);
      if (!user?.confirmed) throw new Error('the employee is no longer a confirmed employee');
      return lead.user_id !== user.id ? change({ user_id: user.id }) : lead;
    }
    case 'distribute':
      return distributeLead(trx, lead, now, action.mode);
    case 'setStatus': {
      const status = await findStatus(trx, lead.account_id, action.statusId);
      if (!status) throw new Error('the status no longer exists');
      return lead.status_id !== status.id ? change({ status_id: status.id, status_type: status.type }) : lead;
    }
    case 'addTag': {
      const tag = await tagToAdd(trx, lead, action.tag, now, tags);
      return (await attachTag(trx, lead.account_id, lead.id, tag.id, now)) ? tagsChanged() : lead;
    }
    case 'removeTag': {
      const tag = await findTag(trx, lead.account_id, action.tag);
      return tag && (await detachTag(trx, lead.id, tag.id)) ? tagsChanged() : lead;
    }
    case 'note': {
      const note = await insertNote(trx, { accountId: lead.account_id, leadId: lead.id, userId: null, text, mentions: [], now });
      await recordEvent(
        trx,
        { accountId: lead.account_id, leadId: lead.id, type: 'lead.note.created', payload: { leadId: lead.id, note: presentNote(note) } },
        now,
      );
      return lead;
    }
  }
  throw new Error(`${action.type} is not a database action`);
}
