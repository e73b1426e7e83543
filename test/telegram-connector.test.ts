import { describe, expect, it } from 'vitest';
import { tl } from '@mtcute/node';
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
} from '../src/connectors/telegram/telegram-mapping.js';
import { parseBridgeMessage } from '../src/domain/bridge/protocol.js';
import * as events from './fixtures/telegram-events.js';

describe('Telegram connector: mtcute events -> bridge protocol', () => {
  it('a private text message becomes a valid inbound message with chat-scoped ids', () => {
    const inbound = inboundOf(events.textMessage)!;
    expect(inbound).toEqual({
      type: 'inbound',
      id: '5011223344:1207',
      chatId: '5011223344',
      datetime: Date.parse('2026-03-01T12:00:05Z'),
      sender: { socialId: '5011223344', login: 'alice_shop_client', name: 'Alice Doe' },
      text: 'Is the blue one in stock?',
    });
    expect(parseBridgeMessage(JSON.stringify(inbound)).ok).toBe(true);
  });

  it('a reply carries the quoted id; files are typed and named', () => {
    expect(inboundOf(events.photoReply)).toMatchObject({ id: '5011223344:1209', replyTo: '5011223344:1208', text: 'this one' });
    expect(
      [events.photoReply, events.documentMessage, events.voiceMessage, events.locationMessage].map((m) => attachmentKindOf(m.media)),
    ).toEqual(['photo', 'doc', 'audio', null]);
    expect(mediaFileName(events.documentMessage)).toBe('invoice-44.pdf');
    expect(mediaFileName(events.photoReply)).toBe('photo-1209.jpg');
    expect(mediaMime(events.photoReply.media!)).toBe('image/jpeg');
    expect(mediaMime(events.documentMessage.media!)).toBe('application/pdf');
    const withFile = {
      ...inboundOf(events.documentMessage)!,
      attachments: [{ type: 'doc', url: '/files/abc/invoice-44.pdf', name: 'invoice-44.pdf', size: 90112 }],
    };
    expect(parseBridgeMessage(JSON.stringify(withFile)).ok).toBe(true);
  });

  it('leaves out what the account sent itself, groups, and media that is no file without text', () => {
    expect(inboundOf(events.outgoingFromPhone)).toBeNull();
    expect(inboundOf(events.groupMessage)).toBeNull();
    expect(inboundOf(events.locationMessage)).toBeNull();
  });

  it("maps mtcute's RpcErrors: final refusals 422-style, flood waits and server errors retryable", () => {
    expect(resultOfError(new tl.RpcError(400, 'USER_IS_BLOCKED'))).toEqual({ ok: false, refused: 'USER_IS_BLOCKED' });
    expect(resultOfError(new tl.RpcError(403, 'CHAT_WRITE_FORBIDDEN'))).toEqual({ ok: false, refused: 'CHAT_WRITE_FORBIDDEN' });
    expect(resultOfError(new tl.RpcError(406, 'USER_RESTRICTED'))).toEqual({ ok: false, refused: 'USER_RESTRICTED' });
    expect(resultOfError(new tl.RpcError(420, 'FLOOD_WAIT_%d'))).toMatchObject({
      ok: false,
      retryable: expect.stringContaining('FLOOD_WAIT'),
    });
    expect(resultOfError(new tl.RpcError(500, 'INTERNAL'))).toEqual({ ok: false, retryable: 'INTERNAL' });
    expect(resultOfError(new Error('socket hang up'))).toEqual({ ok: false, retryable: 'socket hang up' });
  });

  it('identity, profiles, contacts and message ids', () => {
    const identity = identityOf(events.me);
    expect(identity).toEqual({ type: 'identity', login: '+380501112233', externalId: '42', identifier: '42' });
    expect(parseBridgeMessage(JSON.stringify(identity)).ok).toBe(true);
    expect(profileOf(events.textMessage.sender)).toEqual({ name: 'Alice Doe', login: 'alice_shop_client' });
    expect(contactKind('+380501234567')).toEqual({ phone: '+380501234567' });
    expect(contactKind('@alice_shop_client')).toEqual({ username: 'alice_shop_client' });
    expect(contactKind('5011223344')).toEqual({ id: 5011223344 });
    expect(contactKind('not a contact!')).toBeNull();
    expect(parseMessageId(sentId(5011223344, 1300))).toEqual({ chatId: 5011223344, messageId: 1300 });
    expect(parseMessageId('x')).toBeNull();
  });
});
