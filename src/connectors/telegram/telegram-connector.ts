import { InputMedia, TelegramClient, type Message } from '@mtcute/node';
import { BridgeClient, type Json, type RequestResult } from '../bridge-client.js';
import { LoginPrompter } from '../login-prompter.js';
import {
  attachmentKindOf,
  contactKind,
  identityOf,
  inboundOf,
  mediaFileName,
  mediaMime,
  parseMessageId,
  profileOf,
  resultOfError,
  sentId,
  type TgMessage,
} from './telegram-mapping.js';

export interface TelegramConnectorOptions {
  url: string;
  integrationId: number;
  token: string;
  apiId: number;
  apiHash: string;
  /** mtcute's session storage (SQLite file): the login survives restarts. */
  session: string;
  login: 'qr' | 'phone';
  log: (message: string) => void;
}

/**
 * `parley bridge telegram`: a Telegram user account (msgrb_personal) through mtcute (MTProto),
 * served to Parley over the account bridge. Logs in by QR code or phone code (with the 2FA
 * password), prompts and answers passing through Parley's agent app.
 */
export async function runTelegramConnector(opts: TelegramConnectorOptions): Promise<string> {
  const tg = new TelegramClient({ apiId: opts.apiId, apiHash: opts.apiHash, storage: opts.session });
  const bridge = new BridgeClient({
    url: opts.url,
    integrationId: opts.integrationId,
    token: opts.token,
    client: 'parley-telegram/1',
    log: opts.log,
  });
  const prompter = new LoginPrompter(bridge);
  let identity: Json | undefined;

  bridge.start({
    onConnected: () => {
      if (identity) {
        bridge.send(identity);
        bridge.send({ type: 'session', state: 'active' });
      } else prompter.announce();
    },
    onRequest: async (request) => {
      if (request.type === 'login.answer') return prompter.answer(request);
      if (!identity) return { ok: false, retryable: 'not logged in yet' };
      try {
        return await serve(tg, request, opts.url);
      } catch (err) {
        return resultOfError(err);
      }
    },
  });

  const me = await tg.start({
    ...(opts.login === 'qr'
      ? { qrCodeHandler: (url: string, expires: Date) => prompter.qr(url, expires.getTime()) }
      : { phone: () => prompter.ask('phone'), code: () => prompter.ask('code') }),
    password: () => prompter.ask('password'),
    invalidCodeCallback: (type) => prompter.rejectLast(type === 'code' ? 'The code is not valid' : 'The password is not valid'),
    codeSentCallback: () => undefined,
  });
  identity = identityOf(me);
  prompter.clear();
  bridge.send(identity);
  bridge.send({ type: 'session', state: 'active' });
  opts.log(`logged in as ${String(identity.login)}`);

  tg.onNewMessage.add((msg: Message) => void forward(tg, bridge, msg as unknown as TgMessage & Message, opts.log));
  tg.onError.add((err) => {
    const code = (err as { code?: number }).code;
    if (code === 401) bridge.send({ type: 'session', state: 'lost', reason: (err as Error).message });
  });

  const end = await bridge.finished;
  await tg.destroy();
  return `bridge closed: ${end.code} ${end.reason}`;
}

/** A received message to Parley: its files uploaded first, then the inbound message. */
async function forward(tg: TelegramClient, bridge: BridgeClient, msg: TgMessage & Message, log: (m: string) => void): Promise<void> {
  const inbound = inboundOf(msg);
  if (!inbound) return;
  const kind = attachmentKindOf(msg.media);
  try {
    if (kind && msg.media) {
      const bytes = await tg.downloadAsBuffer(msg.media as never);
      const file = await bridge.uploadMedia(bytes, mediaMime(msg.media), mediaFileName(msg));
      inbound.attachments = [{ type: kind, url: file.url, name: file.name, size: file.size }];
    }
  } catch (err) {
    log(`could not upload the file of message ${String(inbound.id)}: ${(err as Error).message}`);
  }
  bridge.inbound(inbound as Json & { id: string });
}

async function peerOf(tg: TelegramClient, contact: string): Promise<number> {
  const kind = contactKind(contact);
  if (!kind) throw Object.assign(new Error('not a phone, username or user id'), { code: 400, text: 'CONTACT_INVALID' });
  const [user] = await tg.getUsers('id' in kind ? kind.id : 'phone' in kind ? kind.phone : kind.username);
  if (!user) throw Object.assign(new Error('no such user'), { code: 400, text: 'USER_NOT_FOUND' });
  return user.id;
}

async function serve(tg: TelegramClient, request: Json, parleyUrl: string): Promise<RequestResult> {
  if (request.type === 'check') {
    try {
      await peerOf(tg, String(request.contact));
      return { ok: true, exists: true };
    } catch (err) {
      const code = (err as { code?: number }).code;
      if (code === 400) return { ok: true, exists: false };
      throw err;
    }
  }
  if (request.type === 'profile') {
    const [user] = await tg.getUsers(Number(request.socialId));
    return { ok: true, profile: user ? profileOf(user) : {} };
  }
  const peer = await peerOf(tg, String(request.chatId));
  const reply = typeof request.replyTo === 'string' ? parseMessageId(request.replyTo)?.messageId : undefined;
  const attachment = request.attachment as { type: string; url: string; name?: string } | undefined;
  const text = typeof request.text === 'string' ? request.text : '';
  let sent: Message;
  if (attachment) {
    const href = new URL(attachment.url, parleyUrl.replace(/^ws/, 'http')).toString();
    const res = await fetch(href);
    if (!res.ok) return { ok: false, retryable: `could not download the file: HTTP ${res.status}` };
    const bytes = new Uint8Array(await res.arrayBuffer());
    const params = { fileName: attachment.name, caption: text };
    const media = attachment.type === 'photo' ? InputMedia.photo(bytes, params) : InputMedia.document(bytes, params);
    sent = await tg.sendMedia(peer, media, reply ? { replyTo: reply } : {});
  } else {
    sent = await tg.sendText(peer, text, reply ? { replyTo: reply } : {});
  }
  return { ok: true, externalIds: [sentId(sent.chat.id, sent.id)] };
}
