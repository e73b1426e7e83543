import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  chatIdOf,
  closeKind,
  identityOf,
  inboundOf,
  jidOf,
  keyOf,
  mediaFileName,
  mediaMime,
  mediaOf,
  messageId,
  profileOf,
  resultOfError,
  statusesOf,
  unwrap,
} from '../src/connectors/whatsapp/whatsapp-mapping.js';
import { WhatsAppRequests, type WaRequestSocket } from '../src/connectors/whatsapp/whatsapp-requests.js';
import { BridgeClient, type Json } from '../src/connectors/bridge-client.js';
import { LoginPrompter } from '../src/connectors/login-prompter.js';
import { parseBridgeMessage } from '../src/domain/bridge/protocol.js';
import { runCli } from '../src/cli.js';
import type { Harness, SignedUp } from './helpers/harness.js';
import { connectPersonal, openBridgeSuite, waitForStatus } from './helpers/bridge-setup.js';
import * as ev from './fixtures/whatsapp-events.js';

const valid = (m: Json) => parseBridgeMessage(JSON.stringify(m)).ok;
const ALICE = '380671234567@s.whatsapp.net';

describe('WhatsApp connector: Baileys events -> bridge protocol', () => {
  it('a text message becomes a valid inbound message, the chat named by the phone in international format', () => {
    const inbound = inboundOf(ev.text, ev.me.id)!;
    expect(inbound).toEqual({
      type: 'inbound',
      id: '+380671234567/0/3EB0C431C26A1D3F8B01',
      chatId: '+380671234567',
      datetime: Date.parse('2026-03-01T12:00:05Z'),
      sender: { socialId: '+380671234567', login: '+380671234567', name: 'Alice Doe' },
      text: 'Is the blue one in stock?',
    });
    expect(valid(inbound)).toBe(true);
  });

  it("a reply names the quoted message with its author: the account's own (1) or the contact's (0)", () => {
    expect(inboundOf(ev.replyToOurs, ev.me.id)).toMatchObject({ text: 'yes, this one', replyTo: '+380671234567/1/BAE5F2A0C1D2E3F4' });
    expect(inboundOf(ev.imageWithCaption, ev.me.id)).toMatchObject({ text: 'like this', replyTo: '+380671234567/0/3EB0C431C26A1D3F8B01' });
    expect(keyOf('+380671234567/1/BAE5F2A0C1D2E3F4')).toEqual({ remoteJid: ALICE, fromMe: true, id: 'BAE5F2A0C1D2E3F4' });
    expect(keyOf(messageId('129876543210987@lid', false, 'X1'))).toEqual({ remoteJid: '129876543210987@lid', fromMe: false, id: 'X1' });
    expect(keyOf('nonsense')).toBeNull();
  });

  it('files: typed, named and given their type; wrappers (disappearing, document with caption) opened', () => {
    const kinds = [ev.imageWithCaption, ev.documentWithCaption, ev.voiceNote, ev.sticker, ev.video].map(
      (m) => mediaOf(unwrap(m.message))?.kind,
    );
    expect(kinds).toEqual(['photo', 'doc', 'audio', 'sticker', 'video']);
    const doc = mediaOf(unwrap(ev.documentWithCaption.message))!;
    expect(inboundOf(ev.documentWithCaption, ev.me.id)).toMatchObject({ text: 'the invoice' });
    expect(mediaFileName(doc.kind, doc.media, '3EB0C431C26A1D3F8B04')).toBe('invoice-44.pdf');
    expect(mediaMime(doc.kind, doc.media)).toBe('application/pdf');
    const voice = mediaOf(unwrap(ev.voiceNote.message))!;
    expect(mediaFileName(voice.kind, voice.media, 'V1')).toBe('audio-V1.ogg');
    expect(mediaMime(voice.kind, voice.media)).toBe('audio/ogg');
    const photo = mediaOf(unwrap(ev.imageWithCaption.message))!;
    expect(mediaFileName(photo.kind, photo.media, 'P1')).toBe('photo-P1.jpg');
    const vid = mediaOf(unwrap(ev.video.message))!;
    expect(mediaFileName(vid.kind, vid.media, 'M1')).toBe('video-M1.mp4');
    // A file without a caption is still a message (its attachment added after the upload).
    const voiceInbound = inboundOf(ev.voiceNote, ev.me.id)!;
    expect(voiceInbound.text).toBeUndefined();
    expect(
      valid({ ...voiceInbound, attachments: [{ type: 'audio', url: '/files/abc/audio-V1.ogg', name: 'audio-V1.ogg', size: 5120 }] }),
    ).toBe(true);
    expect(inboundOf(ev.ephemeral, ev.me.id)).toMatchObject({ text: 'this chat disappears' });
  });

  it('leaves out what the account wrote, groups, status broadcasts and reactions; keeps private (@lid) chats', () => {
    for (const m of [ev.fromPhone, ev.group, ev.statusBroadcast, ev.reaction]) expect(inboundOf(m, ev.me.id)).toBeNull();
    expect(inboundOf(ev.lidChat, ev.me.id)).toMatchObject({
      chatId: '129876543210987@lid',
      sender: { socialId: '129876543210987@lid', name: 'Alice Doe' },
    });
    expect(valid(inboundOf(ev.lidChat, ev.me.id)!)).toBe(true);
  });

  it('receipts of our messages become statuses: delivered, read (and played -> read); others are left out', () => {
    const statuses = statusesOf(ev.updates);
    expect(statuses).toEqual([
      { type: 'status', messageId: '+380671234567/1/BAE5F2A0C1D2E3F4', status: 'delivered' },
      { type: 'status', messageId: '+380671234567/1/BAE5F2A0C1D2E3F4', status: 'read' },
      { type: 'status', messageId: '+380671234567/1/BAE5F2A0C1D2E3F6', status: 'read' },
    ]);
    expect(statuses.every(valid)).toBe(true);
  });

  it('connection closes: logged out and forbidden lose the session, 440 is another client, 515 restarts, the rest reconnect', () => {
    expect(closeKind(ev.closes.loggedOut)).toMatchObject({ kind: 'lost', code: 401 });
    expect(closeKind(ev.closes.forbidden)).toMatchObject({ kind: 'lost', code: 403 });
    expect(closeKind(ev.closes.replaced)).toMatchObject({ kind: 'replaced', code: 440 });
    expect(closeKind(ev.closes.restartRequired)).toMatchObject({ kind: 'restart', code: 515 });
    expect(closeKind(ev.closes.lost)).toMatchObject({ kind: 'reconnect', code: 428 });
    expect(closeKind(undefined)).toMatchObject({ kind: 'reconnect' });
    expect(resultOfError(ev.closes.lost.error)).toEqual({ ok: false, retryable: 'Connection Closed' });
    expect(resultOfError(ev.closes.forbidden.error)).toEqual({ ok: false, refused: 'Stream Errored (forbidden)' });
    expect(resultOfError(new Error('socket hang up'))).toEqual({ ok: false, retryable: 'socket hang up' });
  });

  it('identity, profiles, and contacts as jids', () => {
    const identity = identityOf(ev.me);
    expect(identity).toEqual({ type: 'identity', login: '+380501112233', externalId: '+380501112233', identifier: 'Shop Kyiv' });
    expect(valid(identity)).toBe(true);
    expect(profileOf('+380671234567', 'Alice Doe', 'https://pps.whatsapp.net/v/t61/a.jpg')).toEqual({
      name: 'Alice Doe',
      login: '+380671234567',
      avatar: 'https://pps.whatsapp.net/v/t61/a.jpg',
    });
    expect(jidOf('+380 (67) 123-45-67')).toBe(ALICE);
    expect(jidOf('380671234567')).toBe(ALICE);
    expect(jidOf('380671234567:12@s.whatsapp.net')).toBe(ALICE);
    expect(jidOf('129876543210987@lid')).toBe('129876543210987@lid');
    expect(jidOf('120363041234567890@g.us')).toBeNull();
    expect(jidOf('@alice')).toBeNull();
    expect(chatIdOf(ALICE)).toBe('+380671234567');
  });
});

/** Baileys' socket as the requests use it, answering as WhatsApp would for the numbers it knows. */
function fakeSocket(onWa: Record<string, boolean>) {
  const sent: Array<{ jid: string; content: Record<string, unknown>; options: { quoted?: { key: unknown } } }> = [];
  let n = 0;
  const sock: WaRequestSocket = {
    onWhatsApp: async (...jids: string[]) => jids.map((jid) => ({ jid, exists: onWa[jid] ?? false })),
    sendMessage: (async (jid: string, content: Record<string, unknown>, options: { quoted?: { key: unknown } }) => {
      sent.push({ jid, content, options });
      return { key: { remoteJid: jid, fromMe: true, id: `BAE5000${++n}` } };
    }) as never,
    profilePictureUrl: async () => 'https://pps.whatsapp.net/v/t61/alice.jpg',
  };
  return { sock, sent };
}

describe('WhatsApp connector: requests served with the socket', () => {
  let files: http.Server;
  let filesBase: string;
  beforeAll(async () => {
    files = http.createServer((req, res) => {
      if (req.url === '/files/v.ogg') return res.writeHead(200, { 'content-type': 'audio/ogg' }).end(Buffer.from('OggS-voice'));
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    filesBase = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => files.close(() => resolve())));

  it('sends the text of a voice note first, then the voice note from a Parley file URL (no captions on audio), as a reply', async () => {
    const requests = new WhatsAppRequests(filesBase, (j) => j);
    const { sock, sent } = fakeSocket({ [ALICE]: true });
    const result = await requests.serve(sock, {
      type: 'send',
      chatId: '+380671234567',
      text: 'listen',
      attachment: { type: 'audio', url: '/files/v.ogg', name: 'v.ogg' },
      replyTo: '+380671234567/0/3EB0C431C26A1D3F8B01',
    });
    expect(result).toEqual({ ok: true, externalIds: ['+380671234567/1/BAE50001', '+380671234567/1/BAE50002'] });
    expect(sent.map((s) => s.jid)).toEqual([ALICE, ALICE]);
    // The text's id first, then the file's (docs/channels/bridge.md "Messages").
    const [caption, voice] = sent;
    expect(String(voice?.content.audio)).toBe('OggS-voice');
    expect(voice?.content.mimetype).toBe('audio/ogg');
    expect(caption?.content).toEqual({ text: 'listen' });
    expect(voice?.options.quoted?.key).toEqual({ remoteJid: ALICE, fromMe: false, id: '3EB0C431C26A1D3F8B01' });
    expect([...requests.ownSends]).toEqual(['BAE50001', 'BAE50002']);
    // A message seen in this run is quoted with its content (what the quote shows on the phone).
    requests.remember(ev.text as never);
    await requests.serve(sock, { type: 'send', chatId: '+380671234567', text: 'yes', replyTo: '+380671234567/0/3EB0C431C26A1D3F8B01' });
    expect(sent.at(-1)?.options.quoted).toBe(ev.text);
    const missing = await requests.serve(sock, {
      type: 'send',
      chatId: '+380671234567',
      attachment: { type: 'doc', url: '/files/gone.pdf' },
    });
    expect(missing).toEqual({ ok: false, retryable: 'could not download the file: HTTP 404' });
  });

  it('refuses a number not on WhatsApp before sending anything; check and profile', async () => {
    const requests = new WhatsAppRequests(filesBase, (j) => j);
    const { sock, sent } = fakeSocket({ [ALICE]: true });
    expect(await requests.serve(sock, { type: 'send', chatId: '+15550001111', text: 'hi' })).toEqual({
      ok: false,
      refused: 'This phone number is not on WhatsApp',
    });
    expect(await requests.serve(sock, { type: 'send', chatId: 'a group', text: 'hi' })).toMatchObject({
      ok: false,
      refused: expect.stringContaining('not a phone number'),
    });
    expect(sent).toEqual([]);
    expect(await requests.serve(sock, { type: 'check', contact: '+380671234567' })).toEqual({
      ok: true,
      exists: true,
      contactId: '+380671234567',
    });
    expect(await requests.serve(sock, { type: 'check', contact: '+15550001111' })).toEqual({ ok: true, exists: false });
    requests.pushNames.set(ALICE, 'Alice Doe');
    expect(await requests.serve(sock, { type: 'profile', socialId: '+380671234567' })).toEqual({
      ok: true,
      profile: { name: 'Alice Doe', login: '+380671234567', avatar: 'https://pps.whatsapp.net/v/t61/alice.jpg' },
    });
  });
});

describe('`parley bridge whatsapp` command line', () => {
  it('refuses to start without --accept-risk, saying why, before it checks anything else', async () => {
    const errors: string[] = [];
    const out = { log: () => undefined, error: (m: string) => errors.push(m) };
    expect(
      await runCli(['bridge', 'whatsapp', '--url', 'http://127.0.0.1:1', '--integration', '1', '--token', 'pbt_x'], {}, out as never),
    ).toBe(1);
    expect(errors.at(-1)).toMatch(/needs --accept-risk[\s\S]*terms of service forbid unofficial clients[\s\S]*banned/);
    expect(await runCli(['bridge', 'whatsapp', '--accept-risk', '--url', 'ftp://x'], {}, out as never)).toBe(1);
    expect(errors.at(-1)).toMatch(/--url must be.*--integration must be.*--token .* is required/s);
  });
});

describe('WhatsApp connector: the Parley side through the real server', () => {
  let h: Harness;
  let base: string;
  let owner: SignedUp;
  beforeAll(async () => {
    ({ h, base, owner } = await openBridgeSuite(2000));
  });
  afterAll(() => h?.close());

  it('QR login, write first by phone, the answer joins the same lead and quotes our message, a file, a refusal', async () => {
    const { id, token, body } = await connectPersonal(h, owner, 'msgra');
    expect(body.bridge.command).toBe(
      `npx parley bridge whatsapp --url ${body.bridge.command.split(' ')[5]} --integration ${id} --token ${token} --accept-risk`,
    );
    const client = new BridgeClient({ url: base, integrationId: id, token, client: 'parley-whatsapp/1' });
    const prompter = new LoginPrompter(client);
    const requests = new WhatsAppRequests(base, (j) => j);
    const { sock, sent } = fakeSocket({ [ALICE]: true });
    let linked = false;
    const connected = new Promise<void>((resolve) =>
      client.start({
        onConnected: () => resolve(),
        onRequest: (request) => (linked ? requests.serve(sock, request) : Promise.resolve({ ok: false, retryable: 'not linked' })),
      }),
    );
    await connected;
    const db = () => h.database.db.kysely;

    // Baileys' connection.update qr: the comma-separated pairing data, shown until it expires.
    const qr =
      '2@Jx7Wm0lQ3b8d2F1k9Q==,Vt4Y0c2m8kqjKX9N0r1pVq4hW1J0bS9iE6aY3uZ2qFk=,mD7c9Qv2pX5n1hT6sL0kJ8wR3yB4eA2fG9uI1oP6zC0=,Qm9kdWxlcw==';
    const expiresAt = h.clock.now() + 40_000;
    prompter.qr(qr, expiresAt);
    const state = () => h.request({ method: 'GET', url: `/v1.3/integrations/${id}/bridge`, token: owner.access });
    await vi.waitFor(async () => expect((await state()).json().prompt).toEqual({ kind: 'qr', data: qr, expiresAt, expired: false }));

    // connection.update open: identity and session.
    prompter.clear();
    linked = true;
    client.send(identityOf(ev.me));
    client.send({ type: 'session', state: 'active' });
    await waitForStatus(h, id, 'active');

    const post = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/post',
      token: owner.access,
      payload: { saId: id, destination: '+380671234567', message: { text: 'Hello Alice' } },
    });
    expect(post.statusCode, post.body).toBe(200);
    const leadId = post.json()[0].leadId;
    expect(sent.at(-1)).toMatchObject({ jid: ALICE, content: { text: 'Hello Alice' } });
    const ours = await db()
      .selectFrom('messages')
      .select(['external_id', 'lead_id'])
      .where('integration_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(ours).toEqual({ external_id: '+380671234567/1/BAE50001', lead_id: leadId });

    // Alice answers, quoting it: Baileys' upsert through the mapping, into the same lead.
    const answer = inboundOf(ev.replyToOurs, ev.me.id)!;
    answer.replyTo = ours.external_id!;
    client.inbound(answer as Json & { id: string });
    await vi.waitFor(async () => {
      const row = await db()
        .selectFrom('messages')
        .select(['lead_id', 'reply_to'])
        .where('external_id', '=', answer.id as string)
        .executeTakeFirst();
      expect(row?.lead_id).toBe(leadId);
      expect(row?.reply_to).toContain('Hello Alice');
    });

    // A photo: uploaded with the bridge token, then named in the inbound message.
    const photo = mediaOf(unwrap(ev.imageWithCaption.message))!;
    const jpeg = Buffer.from(`ffd8ffe000104a46494600010100000100010000ffdb004300${'08'.repeat(64)}ffd9`, 'hex');
    const file = await client.uploadMedia(
      jpeg,
      mediaMime(photo.kind, photo.media),
      mediaFileName(photo.kind, photo.media, '3EB0C431C26A1D3F8B03'),
    );
    const withPhoto = { ...(inboundOf(ev.imageWithCaption, ev.me.id) as Json), id: messageId(ALICE, false, '3EB0C431C26A1D3F8B03') };
    client.inbound({ ...withPhoto, attachments: [{ type: photo.kind, url: file.url, name: file.name, size: file.size }] });
    await vi.waitFor(async () => {
      const row = await db()
        .selectFrom('messages')
        .select(['attachments', 'text'])
        .where('external_id', '=', withPhoto.id)
        .executeTakeFirst();
      expect(row?.text).toBe('like this');
      expect(JSON.parse(row!.attachments)[0]).toMatchObject({ type: 'photo', url: file.url });
    });
    for (const status of statusesOf(ev.updates)) client.send(status);

    // A number not on WhatsApp: refused (422), nothing stored.
    const count = async () => (await db().selectFrom('messages').select('id').where('integration_id', '=', id).execute()).length;
    const before = await count();
    const refused = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/post',
      token: owner.access,
      payload: { saId: id, destination: '+15550001111', message: { text: 'hi' } },
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.body).toContain('not on WhatsApp');
    expect(await count()).toBe(before);
    const check = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/check-contact',
      token: owner.access,
      payload: { saId: id, chatId: '+15550001111' },
    });
    expect(check.statusCode).toBe(404);
    expect(
      (
        await h.request({
          method: 'POST',
          url: '/v1.3/messaging/check-contact',
          token: owner.access,
          payload: { saId: id, chatId: '+380671234567' },
        })
      ).statusCode,
    ).toBe(200);

    // Logged out from the phone (connection.update close 401): the session is lost.
    client.send({ type: 'session', state: 'lost', reason: closeKind(ev.closes.loggedOut).reason });
    await waitForStatus(h, id, 'auth failure');
    await client.stop();
  });
});
