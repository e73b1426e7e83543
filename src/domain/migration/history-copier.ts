import type { Executor } from '../../db/database.js';
import { AttachmentError, fetchAttachment } from './attachment-fetcher.js';
import { bulkChannelLists } from './bulk-reads.js';
import {
  Batcher,
  Limit,
  count,
  pool,
  present,
  skip,
  transact,
  writeBatch,
  type MapEntry,
  type MigrationContext,
} from './migration-context.js';
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
 * the source's cursor. One lead's requests go one after another; leads are read `concurrency` at a
 * time, and what they read is written a batch of leads per transaction while the next ones are
 * read. A channel whose history an earlier run read to its end is read again only until the first
 * message already copied: a second run copies what is new.
 */

/** Messages (of whole leads) written per transaction. */
const MESSAGE_BATCH = 1000;
/** Rows per INSERT statement: 16 columns each, well under both databases' parameter limits. */
const MESSAGE_ROWS = 500;

interface SourceRead {
  s: SrcSource;
  /** Not copied yet, oldest first, attachments already pointing at the copies here. */
  messages: Array<{ m: SrcMessage; attachments: SrcAttachment[] }>;
  /** Read to its first message: later runs stop at the first message already copied. */
  complete: boolean;
  readBefore: boolean;
}

interface LeadRead {
  lead: SrcLead;
  leadId: number;
  sources: SourceRead[];
}

export async function copyHistories(ctx: MigrationContext, leads: SrcLead[]): Promise<void> {
  // Only copied leads are read (a dry run reads them all).
  const toRead = leads.filter((l) => ctx.dryRun || ctx.ids.num('lead', l.id) !== undefined);
  const channels = await bulkChannelLists(
    ctx,
    toRead.map((l) => l.id),
  );
  if (ctx.signal?.aborted) return;
  let done = 0;
  const batcher = new Batcher<LeadRead>(MESSAGE_BATCH, (batch) => writeHistories(ctx, batch));
  try {
    // Twice as many leads as requests in flight (the client's bound): one waiting for a write or a
    // download leaves the client busy.
    await pool(toRead, 2 * ctx.concurrency, ctx.signal, async (lead) => {
      let read: LeadRead | undefined;
      try {
        read = await readLeadHistory(ctx, lead, channels.get(lead.id));
      } catch (err) {
        if (err instanceof InterruptedError) return;
        if (!(err instanceof SourceError || err instanceof SchemaError)) throw err;
        skip(ctx.report, 'history', lead.id, err.message);
      }
      ctx.progress('histories', ++done, toRead.length);
      if (read) await batcher.add(read, 1 + read.sources.reduce((n, r) => n + r.messages.length, 0));
    });
  } finally {
    // Leads read to the end are written, an interrupted run included.
    await batcher.flush();
  }
}

/**
 * A lead's channels (`listed`: as the bulk read answered them; read alone otherwise) and what is new
 * in their histories; undefined for a dry run, or when the run was interrupted meanwhile.
 */
async function readLeadHistory(ctx: MigrationContext, lead: SrcLead, listed: unknown): Promise<LeadRead | undefined> {
  // A dry run has no lead here: 0 stands for it, and nothing is written.
  const leadId = ctx.ids.num('lead', lead.id) ?? 0;
  const channels = listed ?? (await ctx.client.json('GET', `/v1.3/messaging/${encodeURIComponent(lead.id)}/sources`)).body;
  const sources: SourceRead[] = [];
  for (const item of list(channels, `the sources of lead ${lead.id}`)) {
    let source: SrcSource;
    try {
      source = readSource(item);
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      skip(ctx.report, 'source', `lead ${lead.id}`, err.message);
      continue;
    }
    if (ctx.signal?.aborted) return undefined;
    if (!ctx.dryRun && !sourceCopyable(ctx, lead, source)) continue;
    const read = await readSourceHistory(ctx, lead, source);
    if (!read) return undefined;
    sources.push(read);
  }
  if (ctx.dryRun) return undefined;
  // The lead's files side by side (within the run's bound on downloads).
  await Promise.all(
    sources.flatMap((r) =>
      r.messages.map(async (row) => {
        row.attachments = await Promise.all(
          row.attachments.map(async (a) => (a.url ? { ...a, url: await copyFile(ctx, lead, a.url, a.text) } : a)),
        );
      }),
    ),
  );
  return ctx.signal?.aborted ? undefined : { lead, leadId, sources };
}

/** A channel is copied with its integration and customer; a new one is counted. */
function sourceCopyable(ctx: MigrationContext, lead: SrcLead, s: SrcSource): boolean {
  if (ctx.ids.get('source', s.realId) !== undefined) return true;
  if (ctx.ids.num('integration', s.integrationId) === undefined || ctx.ids.num('customer', lead.customerId) === undefined) {
    skip(ctx.report, 'source', s.realId, 'its integration was not copied');
    return false;
  }
  count(ctx.report, 'channels');
  return true;
}

/** The pages of one channel's history that hold messages not copied yet; undefined when interrupted. */
async function readSourceHistory(ctx: MigrationContext, lead: SrcLead, s: SrcSource): Promise<SourceRead | undefined> {
  const readBefore = ctx.ids.get('source_done', s.realId) !== undefined;
  const path = `/v1.3/messaging/${encodeURIComponent(lead.id)}/history/${encodeURIComponent(s.realId)}`;
  let cursor: number | string | undefined;
  const collected: SrcMessage[] = [];
  let complete = false;
  for (;;) {
    if (ctx.signal?.aborted) return undefined;
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
  // Oldest first: ids grow with time, as the history's order (newest id first) expects.
  collected.sort((a, b) => a.datetime - b.datetime);
  const ids = new Set<string>();
  // A message the source listed twice (its pages moved while read) is written once.
  const unique = collected.filter((m) => !ids.has(m.messageId) && Boolean(ids.add(m.messageId)));
  return { s, messages: unique.map((m) => ({ m, attachments: m.attachments })), complete, readBefore };
}

/**
 * One transaction for a batch of leads: their new channels, their messages (a few multi-row
 * INSERTs), each lead's last message and unread marks, and the mappings of all of them. A lead the
 * database refuses is skipped alone (writeBatch) and read again by the next run.
 */
async function writeHistories(ctx: MigrationContext, batch: LeadRead[]): Promise<void> {
  await writeBatch(
    ctx,
    batch,
    'history',
    (r) => r.lead.id,
    async (trx, map, items) => {
      const sourceIds = new Map<string, number>();
      for (const r of items)
        for (const { s } of r.sources) {
          if (sourceIds.has(s.realId)) continue;
          const known = ctx.ids.num('source', s.realId);
          sourceIds.set(s.realId, known ?? (await insertSource(ctx, trx, map, r.lead, s)));
        }
      const rows: MessageRow[] = [];
      for (const r of items)
        for (const { s, messages } of r.sources) {
          // sourceCopyable let only channels of copied integrations through.
          const integrationId = present({ get: (id: string) => ctx.ids.num('integration', id) }, s.integrationId, 'integration');
          for (const { m, attachments } of messages)
            rows.push({
              key: `${integrationId}\n${m.messageId}`,
              mapKey: `${s.realId}:${m.messageId}`,
              values: {
                account_id: ctx.accountId,
                lead_id: r.leadId,
                source_id: present(sourceIds, s.realId, 'channel'),
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
              },
            });
        }
      const idOfKey = await insertMessages(trx, rows);
      for (const row of rows) map('message', row.mapKey, present(idOfKey, row.key, 'message'));
      const done = new Set<string>();
      for (const r of items) {
        await repo.settleLead(trx, r.leadId, r.lead.unread);
        for (const { s, complete, readBefore } of r.sources) {
          if (!complete || readBefore || done.has(s.realId) || ctx.ids.get('source_done', s.realId) !== undefined) continue;
          done.add(s.realId);
          map('source_done', s.realId, present(sourceIds, s.realId, 'channel'));
        }
      }
    },
  );
}

type MessageRow = { key: string; mapKey: string; values: Parameters<typeof repo.insertMessageRows>[1][number] };

/**
 * Our id of each row's message by its key (integration and the source's message id, unique here):
 * one already here (the same message under two channels of one integration) is reused, the others
 * are inserted many rows per statement.
 */
async function insertMessages(trx: Executor, rows: MessageRow[]): Promise<Map<string, number>> {
  const idOfKey = new Map<string, number>();
  const byIntegration = new Map<number, string[]>();
  for (const { values } of rows) {
    const ids = byIntegration.get(values.integration_id);
    if (ids) ids.push(values.external_id);
    else byIntegration.set(values.integration_id, [values.external_id]);
  }
  for (const [integrationId, externalIds] of byIntegration)
    for (let i = 0; i < externalIds.length; i += MESSAGE_ROWS)
      for (const found of await repo.messagesByExternalId(trx, integrationId, externalIds.slice(i, i + MESSAGE_ROWS)))
        idOfKey.set(`${integrationId}\n${found.external_id}`, found.id);
  const fresh: MessageRow[] = [];
  const queued = new Set<string>();
  for (const row of rows) {
    if (idOfKey.has(row.key) || queued.has(row.key)) continue;
    queued.add(row.key);
    fresh.push(row);
  }
  for (let i = 0; i < fresh.length; i += MESSAGE_ROWS)
    for (const made of await repo.insertMessageRows(
      trx,
      fresh.slice(i, i + MESSAGE_ROWS).map((r) => r.values),
    ))
      idOfKey.set(`${made.integration_id}\n${made.external_id}`, made.id);
  return idOfKey;
}

async function insertSource(
  ctx: MigrationContext,
  trx: Executor,
  map: (...entry: MapEntry) => void,
  lead: SrcLead,
  s: SrcSource,
): Promise<number> {
  // sourceCopyable let it through with its integration and customer copied.
  const integrationId = present({ get: (id: string) => ctx.ids.num('integration', id) }, s.integrationId, 'integration');
  const customerId = present({ get: (id: string) => ctx.ids.num('customer', id) }, lead.customerId, 'customer');
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
}

/** Downloads in progress by source URL (leads copied side by side that share a file fetch it once), and the bound on them. */
const downloads = new WeakMap<MigrationContext, { inflight: Map<string, Promise<string>>; limit: Limit }>();

/** Our URL of the source's file (downloaded once per URL); the source's URL when it could not be copied. */
function copyFile(ctx: MigrationContext, lead: SrcLead, url: string, name: string | undefined): Promise<string> {
  const known = ctx.ids.get('file', url);
  if (known !== undefined) return Promise.resolve(known);
  let state = downloads.get(ctx);
  if (!state) {
    state = { inflight: new Map(), limit: new Limit(ctx.concurrency) };
    downloads.set(ctx, state);
  }
  let pending = state.inflight.get(url);
  if (!pending) {
    const { inflight, limit } = state;
    pending = limit.run(() => download(ctx, lead, url, name)).finally(() => inflight.delete(url));
    inflight.set(url, pending);
  }
  return pending;
}

async function download(ctx: MigrationContext, lead: SrcLead, url: string, name: string | undefined): Promise<string> {
  ctx.report.downloads++;
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
