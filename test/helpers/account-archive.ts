import { PassThrough, Readable } from 'node:stream';
import { gunzipSync, gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { SECTIONS } from '../../src/domain/portability/archive-format.js';
import { exportAccount } from '../../src/domain/portability/account-exporter.js';
import { insertUser } from '../../src/domain/users/users.repo.js';
import type { Harness, SignedUp } from './harness.js';
import { createIntegration, createLead, createManager } from './fixtures.js';
import { postForm, sample } from './multipart.js';

/** An account archive read whole (tests only: archives here are small). */
export interface ReadArchive {
  entries: Map<string, Buffer>;
  sections: Map<string, Record<string, unknown>[]>;
}

export async function exportToBuffer(h: Harness, accountId: number): Promise<Buffer> {
  const sink = new PassThrough();
  const chunks: Buffer[] = [];
  sink.on('data', (c: Buffer) => chunks.push(c));
  await exportAccount(h.database.db.kysely, h.services.files.storage, accountId, sink);
  return Buffer.concat(chunks);
}

export async function readArchive(archive: Buffer): Promise<ReadArchive> {
  const entries = new Map<string, Buffer>();
  const extract = tar.extract();
  Readable.from([gunzipSync(archive)]).pipe(extract);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const c of entry) chunks.push(c as Buffer);
    entries.set(entry.header.name, Buffer.concat(chunks));
  }
  const sections = new Map<string, Record<string, unknown>[]>();
  for (const [name, body] of entries) {
    const section = /^([a-z_]+)\/\d+\.ndjson$/.exec(name)?.[1];
    if (!section) continue;
    const list = sections.get(section) ?? [];
    for (const line of body.toString('utf8').split('\n')) if (line) list.push(JSON.parse(line) as Record<string, unknown>);
    sections.set(section, list);
  }
  return { entries, sections };
}

/** Rebuilds an archive from entries (in order), gzip-compressed: for tests of altered archives. */
export async function writeArchive(entries: Array<[string, Buffer]>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, body] of entries) pack.entry({ name, size: body.length }, body);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/**
 * The records with every id replaced by its record's position in its section (ids differ between
 * installations; what they link must not): references, leads' last message, employees' allowed
 * users, integrations' user mappings and file ids in messages all become positions.
 */
export function canonical(a: ReadArchive): Record<string, unknown[]> {
  const position = new Map<string, Map<unknown, number>>();
  for (const spec of SECTIONS) position.set(spec.name, new Map((a.sections.get(spec.name) ?? []).map((r, i) => [r.id, i])));
  const pos = (section: string, id: unknown) => (id === null || id === undefined ? id : `${section}#${position.get(section)!.get(id)}`);
  const fileIds = position.get('files')!;
  const out: Record<string, unknown[]> = {};
  for (const spec of SECTIONS) {
    out[spec.name] = (a.sections.get(spec.name) ?? []).map((r) => {
      const c: Record<string, unknown> = { ...r };
      if ('id' in c) c.id = pos(spec.name, c.id);
      for (const [col, target] of Object.entries(spec.refs)) c[col] = pos(target, c[col]);
      if (spec.name === 'leads') c.last_message_id = pos('messages', c.last_message_id);
      if (spec.name === 'employees' && typeof c.allowed_users === 'string') {
        c.allowed_users = (JSON.parse(c.allowed_users) as number[]).map((id) => pos('employees', id));
      }
      if (spec.name === 'integrations' && typeof c.user_mappings === 'string') {
        c.user_mappings = Object.fromEntries(
          Object.entries(JSON.parse(c.user_mappings) as Record<string, number>).map(([k, v]) => [k, pos('employees', v)]),
        );
      }
      if (spec.name === 'messages') {
        for (const col of ['attachments', 'url']) {
          c[col] = String(c[col]).replace(/[A-Za-z0-9_-]{22}/g, (m) => (fileIds.has(m) ? `files#${fileIds.get(m)}` : m));
        }
      }
      return c;
    });
  }
  return out;
}

/**
 * An account with a record in every exported section: a manager limited to one integration who
 * sees the owner's leads, a template of hers, leads with statuses, tags and a payment type,
 * messages (one with an uploaded file, and a lead whose last message is not its newest id), a
 * webhook. Secrets are set wherever the tables hold them, so a test can check none leaves.
 */
export async function seedAccount(h: Harness, owner: SignedUp): Promise<{ integrationId: number; fileId: string; leadIds: number[] }> {
  const db = h.database.db.kysely;
  const accountId = owner.accountId;
  const now = h.clock.now();
  const integrationId = await createIntegration(h, accountId, 'widget');
  const manager = await createManager(h, owner, { sources: [integrationId], allowedUsers: [owner.userId] });
  await insertUser(db, {
    account_id: accountId,
    login: `invitee-${now}-${Math.random().toString(36).slice(2, 7)}@example.com`,
    name: null,
    password_hash: null,
    role: 'manager',
    confirmed: 0,
    created_at: now,
  });
  await db
    .updateTable('integrations')
    .set({ credentials: 'SEALED-CREDENTIALS', user_mappings: JSON.stringify({ 'crm-7': manager.userId }) })
    .where('id', '=', integrationId)
    .execute();
  const status = await db
    .insertInto('statuses')
    .values({ account_id: accountId, name: 'Paid', type: 'completed', position: 9, color: '#00ff00', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const payment = await db
    .insertInto('payment_types')
    .values({ account_id: accountId, title: 'Card' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const tag = await db
    .insertInto('tags')
    .values({ account_id: accountId, tag: 'VIP', tag_key: 'vip', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const group = await db
    .insertInto('template_groups')
    .values({ account_id: accountId, key: 'greetings', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('templates')
    .values({ account_id: accountId, group_id: group.id, template: 'Hello!', hotkey: 'h', user_id: manager.userId, created_at: now })
    .execute();
  await db
    .insertInto('templates')
    .values({ account_id: accountId, group_id: group.id, template: 'Bye', user_id: null, created_at: now })
    .execute();

  const upload = await postForm(h, '/v1.3/messaging/upload', owner.access, [
    ['said', String(integrationId)],
    ['media', { data: sample('png'), type: 'image/png', filename: 'photo.png' }],
  ]);
  if (upload.statusCode !== 200) throw new Error(`upload failed: ${upload.body}`);
  const fileId = /files\/([A-Za-z0-9_-]{22})/.exec(upload.body)![1]!;

  const leadIds: number[] = [];
  for (let i = 0; i < 3; i++) {
    const lead = await createLead(h, accountId, integrationId, {
      userId: i === 0 ? manager.userId : null,
      statusId: i === 1 ? status.id : null,
      statusType: i === 1 ? 'completed' : 'inbox',
      customerName: `Customer ${i} \u00e9\u{1F600}`,
    });
    leadIds.push(lead.leadId);
    const ids: number[] = [];
    for (let m = 0; m < 3; m++) {
      const attachments = i === 0 && m === 1 ? JSON.stringify([{ type: 'photo', url: `/files/${fileId}/photo.png` }]) : '[]';
      const row = await db
        .insertInto('messages')
        .values({
          account_id: accountId,
          lead_id: lead.leadId,
          source_id: lead.sourceId,
          integration_id: integrationId,
          incoming: m % 2,
          text: `message ${i}.${m} "quoted"\nline`,
          attachments,
          profile_id: m % 2 ? lead.profileId : null,
          user_id: m % 2 ? null : owner.userId,
          created_at: now + m,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.push(row.id);
    }
    await db
      .updateTable('leads')
      .set({
        last_message_id: ids[i === 2 ? 1 : 2],
        payment_type_id: i === 0 ? payment.id : null,
        custom_fields: JSON.stringify({ size: 'L' }),
      })
      .where('id', '=', lead.leadId)
      .execute();
    if (i < 2)
      await db.insertInto('lead_tags').values({ account_id: accountId, lead_id: lead.leadId, tag_id: tag.id, created_at: now }).execute();
  }
  await db
    .insertInto('webhooks')
    .values({
      account_id: accountId,
      url: 'https://hooks.example.com/parley',
      name: 'crm',
      events: JSON.stringify(['message.created']),
      secret: 'whsec_TOPSECRETVALUE',
      api_version: '1.3',
      created_at: now,
    })
    .execute();
  return { integrationId, fileId, leadIds };
}
