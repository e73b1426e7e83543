import fs from 'node:fs/promises';
import path from 'node:path';
import type { WAMessage, WASocket } from 'baileys';
import pino from 'pino';
import { BridgeClient, type Json } from '../bridge-client.js';
import { LoginPrompter } from '../login-prompter.js';
import {
  closeKind,
  identityOf,
  inboundOf,
  mediaFileName,
  mediaMime,
  mediaOf,
  mediaSize,
  resultOfError,
  statusesOf,
  unwrap,
  type WaMessage,
} from './whatsapp-mapping.js';
import { WhatsAppRequests } from './whatsapp-requests.js';

export interface WhatsAppConnectorOptions {
  url: string;
  integrationId: number;
  token: string;
  /** Baileys' multi-file auth state: the linked device survives restarts. */
  sessionDir: string;
  log: (message: string) => void;
}

/** How long a QR code lives (Baileys' qrTimeout, set so the expiry Parley shows is exact). */
const QR_MS = 40_000;
/** Files Baileys' useMultiFileAuthState writes: removed when WhatsApp ends the session. */
const SESSION_FILE = /^(creds\.json|(pre-key|session|sender-key|sender-key-memory|app-state-sync-key|app-state-sync-version)-.+\.json)$/;

/**
 * `parley bridge whatsapp`: a WhatsApp account (msgra, msgra2) linked as a device through Baileys
 * (WhatsApp Web multi-device), served to Parley over the account bridge. Logs in by QR code shown in
 * Parley's agent app; the session lives in `sessionDir`. Runs until the bridge closes for good.
 */
export async function runWhatsAppConnector(opts: WhatsAppConnectorOptions): Promise<string> {
  // Loaded here, not at the top: baileys is an optional dependency (GPL-3.0 libsignal, see docs/channels/bridge.md).
  const baileys = await import('baileys');
  const logger = pino({ level: process.env.PARLEY_BRIDGE_LOG_LEVEL ?? 'error' }, pino.destination(2));
  const bridge = new BridgeClient({
    url: opts.url,
    integrationId: opts.integrationId,
    token: opts.token,
    client: 'parley-whatsapp/1',
    log: opts.log,
  });
  const prompter = new LoginPrompter(bridge);
  const requests = new WhatsAppRequests(opts.url, baileys.jidNormalizedUser);
  const { pushNames, ownSends } = requests;
  let sock: WASocket | undefined;
  let identity: Json | undefined;
  let open = false;
  let lost: string | undefined;
  let stopped = false;
  let backoffMs = 1000;

  bridge.start({
    onConnected: () => {
      if (identity && open) {
        bridge.send(identity);
        bridge.send({ type: 'session', state: 'active' });
      } else if (lost) bridge.send({ type: 'session', state: 'lost', reason: lost });
      prompter.announce();
    },
    onRequest: async (request) => {
      // WhatsApp renews its QR code by itself; typed answers have no place in a QR login.
      if (request.type === 'login.answer') return request.kind === 'qr' ? { ok: true } : prompter.answer(request);
      if (!sock || !open) return { ok: false, retryable: 'the WhatsApp connection is not open' };
      try {
        return await requests.serve(sock, request);
      } catch (err) {
        return resultOfError(err);
      }
    },
  });

  const connect = async (): Promise<void> => {
    if (stopped) return;
    // Baileys' multi-file auth state (named like a hook, it is a plain async function).
    const { useMultiFileAuthState: loadAuthState } = baileys;
    const { state, saveCreds } = await loadAuthState(opts.sessionDir);
    const s = baileys.makeWASocket({
      auth: state,
      logger,
      browser: baileys.Browsers.ubuntu('Parley'),
      qrTimeout: QR_MS,
      // Parley stores what it sends; the upsert of our own sends would come back as a copy.
      emitOwnEvents: false,
      markOnlineOnConnect: false,
      syncFullHistory: false,
      shouldIgnoreJid: (jid) => !(jid.endsWith('@s.whatsapp.net') || jid.endsWith('@lid')),
    });
    sock = s;
    s.ev.on('creds.update', saveCreds);
    s.ev.on('connection.update', (update) => {
      if (update.qr) prompter.qr(update.qr, Date.now() + QR_MS);
      if (update.connection === 'open' && s.user) {
        open = true;
        lost = undefined;
        backoffMs = 1000;
        prompter.clear();
        identity = identityOf(s.user);
        bridge.send(identity);
        bridge.send({ type: 'session', state: 'active' });
        opts.log(`linked as ${String(identity.login)}`);
      }
      if (update.connection === 'close') {
        open = false;
        if (sock === s) sock = undefined;
        void onClose(closeKind(update.lastDisconnect));
      }
    });
    s.ev.on('messages.upsert', ({ messages }) => {
      for (const msg of messages) {
        if (msg.key.id && ownSends.has(msg.key.id)) continue;
        if (msg.pushName && msg.key.remoteJid && !msg.key.fromMe) pushNames.set(msg.key.remoteJid, msg.pushName);
        requests.remember(msg);
        void forward(s, msg);
      }
    });
    s.ev.on('messages.update', (updates) => {
      for (const status of statusesOf(updates as never)) bridge.send(status);
    });
    const names = (contacts: Array<{ id?: string; notify?: string | null }>) => {
      for (const c of contacts) if (c.id && c.notify) pushNames.set(c.id, c.notify);
    };
    s.ev.on('contacts.upsert', names);
    s.ev.on('contacts.update', names);
  };

  const onClose = async (why: ReturnType<typeof closeKind>): Promise<void> => {
    if (stopped) return;
    if (why.kind === 'lost') {
      // Linked-device keys are void now: start over with a new QR code for the owner.
      identity = undefined;
      lost = why.reason;
      bridge.send({ type: 'session', state: 'lost', reason: why.reason });
      opts.log(`session lost: ${why.reason}; waiting for a new QR login`);
      await clearSession(opts.sessionDir);
      return connect();
    }
    if (why.kind === 'replaced') {
      // Two clients on one session kick each other out in turn: leave it to the other one.
      bridge.send({ type: 'session', state: 'lost', reason: why.reason });
      opts.log(`${why.reason}; stopping`);
      return bridge.stop();
    }
    const wait = why.kind === 'restart' ? 0 : backoffMs;
    if (why.kind === 'reconnect') backoffMs = Math.min(backoffMs * 2, 60_000);
    opts.log(`WhatsApp connection closed (${why.code ?? '-'} ${why.reason}); reconnecting in ${wait} ms`);
    setTimeout(() => void connect().catch((err: unknown) => opts.log(`reconnect failed: ${(err as Error).message}`)), wait).unref();
  };

  /** A received message to Parley: its file uploaded first, then the inbound message. */
  const forward = async (s: WASocket, msg: WAMessage): Promise<void> => {
    const inbound = inboundOf(msg as WaMessage, s.user?.id ?? '');
    if (!inbound) return;
    const file = mediaOf(unwrap((msg as WaMessage).message));
    if (file) {
      try {
        const bytes = await baileys.downloadMediaMessage(msg, 'buffer', {}, { logger, reuploadRequest: s.updateMediaMessage });
        const name = mediaFileName(file.kind, file.media, msg.key.id ?? 'file');
        const stored = await bridge.uploadMedia(bytes, mediaMime(file.kind, file.media), name);
        inbound.attachments = [{ type: file.kind, url: stored.url, name: stored.name, size: stored.size ?? mediaSize(file.media) }];
      } catch (err) {
        opts.log(`could not upload the file of message ${String(inbound.id)}: ${(err as Error).message}`);
        if (!inbound.text) inbound.text = `[${file.kind}: the file could not be downloaded]`;
      }
    }
    bridge.inbound(inbound as Json & { id: string });
  };

  await fs.mkdir(opts.sessionDir, { recursive: true, mode: 0o700 });
  await connect();
  const end = await bridge.finished;
  stopped = true;
  sock?.end(undefined);
  return `bridge closed: ${end.code} ${end.reason}`;
}

/** Removes the files of a session WhatsApp ended (only Baileys' own files, never the folder). */
async function clearSession(dir: string): Promise<void> {
  for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
    if (SESSION_FILE.test(name)) await fs.rm(path.join(dir, name), { force: true });
  }
}
