import { AttachmentError, fetchAttachment } from './attachment-fetcher.js';
import { count, orSkip, pool, skip, transact, type MigrationContext } from './migration-context.js';
import * as repo from './migration.repo.js';
import { InterruptedError, SourceError } from './source-client.js';
import {
  SchemaError,
  list,
  readMessage,
  readSource,
  idOf,
  type SrcAttachment,
  type SrcLead,
  type SrcMessage,
  type SrcSource,
} from './source-records.js';

/**
 * Every lead's channels and their whole history (docs/migrate.md), newest page first, following
 * the source's cursor. One lead's requests go one after another; leads run `concurrency` at a time.
 * A channel whose history an earlier run read to its end is read again only until the first
 * message already copied: a second run copies what is new.
 */
/** Messages written per transaction. */
const INSERT_BATCH = 200;

export async function copyHistories(ctx: MigrationContext, leads: SrcLead[]): Promise<void> {
  let done = 0;
  await pool(leads, ctx.concurrency, ctx.signal, async (lead) => {
    try {
      await copyLeadHistory(ctx, lead);
    } catch (err) {
      if (err instanceof InterruptedError) return;
      if (!(err instanceof SourceError || err instanceof SchemaError)) throw err;
      skip(ctx.report, 'history', lead.id, err.message);
    }
    ctx.progress('histories', ++done, leads.length);
  });
}

async function copyLeadHistory(ctx: MigrationContext, lead: SrcLead): Promise<void> {
  // A dry run has no lead here: 0 stands for it, and nothing is written.
  const leadId = ctx.ids.num('lead', lead.id) ?? 0;
  if (leadId === 0 && !ctx.dryRun) return;
  const answer = await ctx.client.json('GET', `/v1.3/messaging/${encodeURIComponent(lead.id)}/sources`);
  for (const item of list(answer.body, `the sources of lead ${lead.id}`)) {
    let source: SrcSource;
    try {
      source = readSource(item);
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      skip(ctx.report, 'source', `lead ${lead.id}`, err.message);
      continue;
    }
    if (ctx.signal?.aborted) return;
    const sourceId = ctx.dryRun ? 0 : await ensureSource(ctx, lead, source);
    if (sourceId === undefined) continue;
    await copySourceHistory(ctx, lead, leadId, source, sourceId);
  }
  if (!ctx.dryRun && !ctx.signal?.aborted) await repo.settleLead(ctx.db, leadId, lead.unread);
}

async function ensureSource(ctx: MigrationContext, lead: SrcLead, s: SrcSource): Promise<number | undefined> {
  const known = ctx.ids.num('source', s.realId);
  if (known !== undefined) return known;
  const integrationId = ctx.ids.num('integration', s.integrationId);
  const customerId = ctx.ids.num('customer', lead.customerId);
  if (integrationId === undefined || customerId === undefined) {
    skip(ctx.report, 'source', s.realId, 'its integration was not copied');
    return undefined;
  }
  count(ctx.report, 'channels');
  return transact(ctx, async (trx, map) => {
    // The same channel may already be here (a customer copied twice by two sources): it is reused.
    const existing = await trx
      .selectFrom('sources')
      .select('id')
      .where('integration_id', '=', integrationId)
      .where('type', '=', s.type)
      .where('external_id', '=', s.externalId)
      .executeTakeFirst();
    const id =
      existing?.id ??
      (
        await trx
          .insertInto('sources')
          .values({
            account_id: ctx.accountId,
            integration_id: integrationId,
            customer_id: customerId,
            external_id: s.externalId,
            type: s.type,
            name: s.name,
            sender: s.sender,
            token: null,
            expires_at: s.expiresAt,
            created_at: ctx.now(),
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    map('source', s.realId, id);
    return id;
  });
}

async function copySourceHistory(ctx: MigrationContext, lead: SrcLead, leadId: number, s: SrcSource, sourceId: number): Promise<void> {
  const readBefore = ctx.ids.get('source_done', s.realId) !== undefined;
  const path = `/v1.3/messaging/${encodeURIComponent(lead.id)}/history/${encodeURIComponent(s.realId)}`;
  let cursor: number | string | undefined;
  const collected: SrcMessage[] = [];
  let complete = false;
  for (;;) {
    if (ctx.signal?.aborted) return;
    let answer;
    try {
      answer = await ctx.client.json('POST', path, cursor === undefined ? {} : { cursor });
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      skip(ctx.report, 'history', `${lead.id}/${s.realId}`, err.message);
      break;
    }
    const body = (typeof answer.body === 'object' && answer.body !== null ? answer.body : {}) as { cursor?: unknown; messages?: unknown };
    const messages: SrcMessage[] = [];
    for (const item of Array.isArray(body.messages) ? body.messages : []) {
      try {
        messages.push(readMessage(item));
      } catch (err) {
        if (!(err instanceof SchemaError)) throw err;
        skip(ctx.report, 'message', `${lead.id}/${s.realId}`, err.message);
      }
    }
    const fresh = messages.filter((m) => ctx.ids.get('message', `${s.realId}:${m.messageId}`) === undefined);
    count(ctx.report, 'messages', false, messages.length - fresh.length);
    count(ctx.report, 'messages', true, fresh.length);
    if (ctx.dryRun)
      count(
        ctx.report,
        'attachments',
        true,
        fresh.reduce((n, m) => n + m.attachments.filter((a) => a.url).length, 0),
      );
    else collected.push(...fresh);
    // Back at what an earlier run copied: the rest is here already.
    if (readBefore && fresh.length < messages.length) break;
    const next = typeof body.cursor === 'string' ? body.cursor : idOf(body.cursor);
    if (!messages.length || next === undefined || next === '-1' || String(next) === String(cursor)) {
      complete = true;
      break;
    }
    cursor = typeof body.cursor === 'number' ? body.cursor : next;
  }
  if (ctx.dryRun) return;
  // Oldest first: ids grow with time, as the history's order (newest id first) expects.
  collected.sort((a, b) => a.datetime - b.datetime);
  const ids = new Set<string>();
  // A message the source listed twice (its pages moved while read) is written once.
  const unique = collected.filter((m) => !ids.has(m.messageId) && Boolean(ids.add(m.messageId)));
  for (let i = 0; i < unique.length; i += INSERT_BATCH) {
    if (ctx.signal?.aborted) return;
    await insertMessages(ctx, lead, leadId, s, sourceId, unique.slice(i, i + INSERT_BATCH));
  }
  if (complete && !readBefore) await transact(ctx, async (_trx, map) => map('source_done', s.realId, sourceId));
}

async function insertMessages(ctx: MigrationContext, lead: SrcLead, leadId: number, s: SrcSource, sourceId: number, fresh: SrcMessage[]) {
  // ensureSource copied the channel only with its integration.
  const integrationId = ctx.ids.num('integration', s.integrationId) ?? 0;
  const rows: Array<{ m: SrcMessage; attachments: SrcAttachment[] }> = [];
  for (const m of fresh) {
    const attachments: SrcAttachment[] = [];
    for (const a of m.attachments) {
      if (!a.url) {
        attachments.push(a);
        continue;
      }
      attachments.push({ ...a, url: await copyFile(ctx, lead, a.url, a.text) });
    }
    rows.push({ m, attachments });
  }
  await orSkip(ctx, 'messages', `${lead.id}/${s.realId}`, () =>
    transact(ctx, async (trx, map) => {
      for (const { m, attachments } of rows) {
        const existing = await trx
          .selectFrom('messages')
          .select('id')
          .where('integration_id', '=', integrationId)
          .where('external_id', '=', m.messageId)
          .executeTakeFirst();
        const id =
          existing?.id ??
          (
            await trx
              .insertInto('messages')
              .values({
                account_id: ctx.accountId,
                lead_id: leadId,
                source_id: sourceId,
                integration_id: integrationId,
                external_id: m.messageId,
                incoming: m.incoming ? 1 : 0,
                text: m.text,
                url: m.url,
                attachments: JSON.stringify(attachments),
                reply_to: m.replyTo,
                preview: m.preview,
                profile_id: ctx.ids.num('profile', m.profileId) ?? null,
                user_id: ctx.ids.num('employee', m.userId) ?? null,
                custom_id: null,
                unread: 0,
                created_at: m.datetime,
              })
              .returning('id')
              .executeTakeFirstOrThrow()
          ).id;
        map('message', `${s.realId}:${m.messageId}`, id);
      }
    }),
  );
}

/** Downloads in progress by source URL: leads copied side by side that share a file fetch it once. */
const downloads = new WeakMap<MigrationContext, Map<string, Promise<string>>>();

/** Our URL of the source's file (downloaded once per URL); the source's URL when it could not be copied. */
function copyFile(ctx: MigrationContext, lead: SrcLead, url: string, name: string | undefined): Promise<string> {
  const known = ctx.ids.get('file', url);
  if (known !== undefined) return Promise.resolve(known);
  let inflight = downloads.get(ctx);
  if (!inflight) {
    inflight = new Map();
    downloads.set(ctx, inflight);
  }
  let pending = inflight.get(url);
  if (!pending) {
    const running = inflight;
    pending = download(ctx, lead, url, name).finally(() => running.delete(url));
    inflight.set(url, pending);
  }
  return pending;
}

async function download(ctx: MigrationContext, lead: SrcLead, url: string, name: string | undefined): Promise<string> {
  try {
    const file = await fetchAttachment(ctx.files, ctx.accountId, ctx.fileSource, url, name);
    await transact(ctx, async (_trx, map) => map('file', url, file.url));
    count(ctx.report, 'attachments');
    return file.url;
  } catch (err) {
    if (!(err instanceof AttachmentError)) throw err;
    skip(ctx.report, 'attachment', `lead ${lead.id}: ${url.slice(0, 200)}`, err.message);
    return url;
  }
}
