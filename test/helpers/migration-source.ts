import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Harness, SignedUp } from './harness.js';
import { createIntegration, createLead, createManager } from './fixtures.js';
import { postForm, sample } from './multipart.js';

/**
 * The source of `parley migrate` tests: a Parley account (it speaks the API `migrate` reads) with
 * employees, statuses, tags, templates, payment types, several integration types, leads in every
 * list, and messages with replies and attachments (one stored, one missing, one on a private host).
 */
export async function seedSource(
  h: Harness,
  owner: SignedUp,
  size: { leads: number; messagesPerLead: number },
): Promise<{ managerId: number; leadIds: number[]; messages: number; fileId: string }> {
  const db = h.database.db.kysely;
  const accountId = owner.accountId;
  const now = h.clock.now();
  const widget = await createIntegration(h, accountId, 'widget', 'site');
  const telegram = await createIntegration(h, accountId, 'msgrc_bot', 'shop_bot');
  const vk = await createIntegration(h, accountId, 'social2_group', 'club1');
  const manager = await createManager(h, owner, { sources: [widget, telegram], allowedUsers: [owner.userId] });
  const statuses = await db.selectFrom('statuses').select(['id', 'type']).where('account_id', '=', accountId).execute();
  const paid = await db
    .insertInto('statuses')
    .values({ account_id: accountId, name: 'Paid', type: 'completed', position: 7, color: '#00aa00', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const byType = (t: string) => statuses.find((s) => s.type === t)?.id ?? paid.id;
  const payment = await db
    .insertInto('payment_types')
    .values({ account_id: accountId, title: 'Card' })
    .returning('id')
    .executeTakeFirstOrThrow();
  const tags = [];
  for (const tag of ['VIP', 'Wholesale']) {
    tags.push(
      await db
        .insertInto('tags')
        .values({ account_id: accountId, tag, tag_key: tag.toLowerCase(), created_at: now })
        .returning('id')
        .executeTakeFirstOrThrow(),
    );
  }
  const group = await db
    .insertInto('template_groups')
    .values({ account_id: accountId, key: 'greetings', created_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .insertInto('templates')
    .values([
      { account_id: accountId, group_id: group.id, template: 'Hello!', hotkey: 'h', user_id: manager.userId, created_at: now },
      { account_id: accountId, group_id: group.id, template: 'Bye', hotkey: '', user_id: null, created_at: now },
    ])
    .execute();
  await db
    .insertInto('webhooks')
    .values({ account_id: accountId, url: 'https://hooks.example.com/parley', secret: 'SECRET', api_version: 'v1.3', created_at: now })
    .execute();
  const upload = await postForm(h, '/v1.3/messaging/upload', owner.access, [
    ['said', String(widget)],
    ['media', { data: sample('png'), type: 'image/png', filename: 'photo.png' }],
  ]);
  if (upload.statusCode !== 200) throw new Error(`upload failed: ${upload.body}`);
  const fileId = /files\/([A-Za-z0-9_-]{22})/.exec(upload.body)![1]!;

  const integrations = [widget, telegram, vk];
  const leadIds: number[] = [];
  let messages = 0;
  for (let i = 0; i < size.leads; i++) {
    const kind = ['inbox', 'active', 'completed', 'failed', 'ignore'][i % 5]!;
    const statusId = kind === 'inbox' ? null : kind === 'completed' && i % 2 ? paid.id : byType(kind);
    const lead = await createLead(h, accountId, integrations[i % 3]!, {
      userId: i % 4 === 0 ? manager.userId : i % 4 === 1 ? owner.userId : null,
      statusId,
      statusType: kind as 'inbox',
      customerName: `Customer ${i} \u00e9`,
    });
    await db
      .updateTable('customers')
      .set({ email: `c${i}@example.com`, phone: `+1555${String(i).padStart(6, '0')}`, address: i % 2 ? `Street ${i}` : null })
      .where('id', '=', lead.customerId)
      .execute();
    leadIds.push(lead.leadId);
    const rows = [];
    for (let m = 0; m < size.messagesPerLead; m++) {
      const incoming = m % 2 === 0;
      const n = messages + m;
      const attachments =
        n % 97 === 5
          ? [{ type: 'photo', url: `/files/${fileId}/photo.png`, text: 'photo.png' }]
          : n % 997 === 7
            ? [{ type: 'doc', url: '/files/AAAAAAAAAAAAAAAAAAAAAA/gone.pdf', text: 'gone.pdf' }]
            : n === 11
              ? [{ type: 'photo', url: 'http://10.0.0.1/internal.png', text: 'internal.png' }]
              : [];
      rows.push({
        account_id: accountId,
        lead_id: lead.leadId,
        source_id: lead.sourceId,
        integration_id: integrations[i % 3]!,
        external_id: `m-${i}-${m}`,
        incoming: incoming ? 1 : 0,
        text: `message ${i}.${m}`,
        attachments: JSON.stringify(attachments),
        reply_to:
          m === 3
            ? JSON.stringify({
                messageId: 1,
                datetime: now,
                incoming: true,
                preview: null,
                sender: { id: 1 },
                message: { text: 'q', url: '', attachments: [] },
              })
            : null,
        profile_id: incoming ? lead.profileId : null,
        user_id: incoming ? null : owner.userId,
        unread: 0,
        created_at: now - (size.leads - i) * 60_000 + m * 1000,
      });
    }
    const inserted = await db.insertInto('messages').values(rows).returning(['id', 'created_at', 'incoming']).execute();
    messages += rows.length;
    const last = inserted.at(-1)!;
    const unread = i % 3 === 0 ? 1 : 0;
    if (unread) await db.updateTable('messages').set({ unread: 1 }).where('id', '=', inserted.at(-2)!.id).execute();
    await db
      .updateTable('leads')
      .set({
        last_message_id: last.id,
        last_message_at: last.created_at,
        last_message_incoming: last.incoming,
        unread_count: unread,
        details: `details ${i}`,
        amount: i * 10,
        address: `Address ${i}`,
        ttn: `TTN${i}`,
        custom_data: `{"n":${i}}`,
        custom_fields: JSON.stringify({ size: { value: 'L', title: 'Size' } }),
        items: JSON.stringify([{ title: 'Shirt', count: 2, id: i }]),
        payment_type_id: i % 2 ? payment.id : null,
        response_time: i % 2 ? 1000 * i : null,
      })
      .where('id', '=', lead.leadId)
      .execute();
    if (i % 3 === 0)
      await db
        .insertInto('lead_tags')
        .values({ account_id: accountId, lead_id: lead.leadId, tag_id: tags[i % 2]!.id, created_at: now })
        .execute();
  }
  return { managerId: manager.userId, leadIds, messages, fileId };
}

/** A server on loopback answering with `handler`; `url` is its base. */
export async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Forwards to `target`, except where `fault` answers first (429, 502, ...). */
export function proxy(
  target: string,
  fault: (req: http.IncomingMessage, n: number) => { status: number; headers?: Record<string, string> } | undefined,
): http.RequestListener {
  let n = 0;
  return (req, res) => {
    const f = fault(req, ++n);
    if (f) {
      res.writeHead(f.status, { 'content-type': 'application/json', ...f.headers });
      res.end(JSON.stringify({ code: 'fault', message: 'injected' }));
      return;
    }
    const up = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  };
}
