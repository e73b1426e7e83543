import type { HistoryMessage, SourceObject } from '../../domain/conversations/history-message.js';
import type { HistoryPage, PostedMessage } from '../../domain/messaging/messaging.types.js';
import type { VersionTraits } from '../versions.js';

/**
 * Source and History message as the API answers them. `identifier` of sources exists from v1.2
 * (trait `sourceIdentifier`); `customId` is left out everywhere here: the contract (docs/api/messaging.md) returns it only in
 * the outgoing message webhook.
 */
export type SourceOut = Omit<SourceObject, 'identifier'> & { identifier?: string };
export type HistoryMessageOut = Omit<HistoryMessage, 'customId' | 'source'> & { source: SourceOut };

export function serializeSource(source: SourceObject, traits: Pick<VersionTraits, 'sourceIdentifier'>): SourceOut {
  const out: SourceOut = {
    id: source.id,
    realId: source.realId,
    name: source.name,
    type: source.type,
    saId: source.saId,
    sender: source.sender,
    token: source.token,
    expires: source.expires,
  };
  if (traits.sourceIdentifier) out.identifier = source.identifier;
  return out;
}

export function serializeSources(sources: SourceObject[], traits: VersionTraits): SourceOut[] {
  return sources.map((s) => serializeSource(s, traits));
}

export function serializeHistoryMessage(
  message: HistoryMessage,
  traits: VersionTraits,
  source: SourceOut = serializeSource(message.source, traits),
): HistoryMessageOut {
  const out: HistoryMessageOut = {
    messageId: message.messageId,
    datetime: message.datetime,
    sa: message.sa,
    incoming: message.incoming,
    message: message.message,
    sender: message.sender,
    source,
    replyTo: message.replyTo,
    preview: message.preview,
  };
  if (traits.deliveryStatus && message.status) {
    out.status = message.status;
    if (message.error) out.error = message.error;
  }
  return out;
}

/** Messages of one channel share their source object (history-message.ts): it is serialized once. */
export function serializeHistoryMessages(messages: HistoryMessage[], traits: VersionTraits): HistoryMessageOut[] {
  let from: SourceObject | undefined;
  let out: SourceOut | undefined;
  return messages.map((m) => {
    if (m.source !== from) {
      from = m.source;
      out = serializeSource(m.source, traits);
    }
    return serializeHistoryMessage(m, traits, out);
  });
}

export function serializeHistoryPage(page: HistoryPage, traits: VersionTraits) {
  return { cursor: page.cursor, source: page.source, messages: serializeHistoryMessages(page.messages, traits) };
}

export function serializePosted(messages: PostedMessage[], traits: VersionTraits): Array<HistoryMessageOut & { leadId: number }> {
  return messages.map((m) => ({ ...serializeHistoryMessage(m, traits), leadId: m.leadId }));
}
