import type { CustomerRow, IntegrationRow, ProfileRow, SourceRow } from '../../db/schema.js';
import type { MessageValues } from './conversations.repo.js';
import type { IncomingMessage, SenderProfile } from '../channels/channel.js';
import { integrationTypeInfo } from '../channels/integration-types.js';
import { DEFAULT_COUNTRY, normalizePhone, type StoredPhone } from '../customers/phone.js';

/*
 * What a message creates and changes, shared by the single-message ingest (ingest.service.ts) and
 * the PostgreSQL batch (ingest-batch.ts), and by the two ways an employee's message is stored
 * (ingest.service.ts), so each pair writes the same rows.
 */

/** An incoming message's values in its conversation; `replyTo` is the quoted message's snapshot (JSON). */
export function incomingMessageValues(
  integration: IntegrationRow,
  ids: { leadId: number; sourceId: number; profileId: number },
  incoming: Pick<IncomingMessage, 'externalId' | 'text' | 'url' | 'attachments' | 'preview' | 'datetime'>,
  replyTo: string | null,
): MessageValues {
  return {
    account_id: integration.account_id,
    lead_id: ids.leadId,
    source_id: ids.sourceId,
    integration_id: integration.id,
    external_id: incoming.externalId,
    incoming: 1,
    text: incoming.text ?? '',
    url: incoming.url ?? '',
    attachments: JSON.stringify(incoming.attachments ?? []),
    reply_to: replyTo,
    preview: incoming.preview ? JSON.stringify(incoming.preview) : null,
    profile_id: ids.profileId,
    user_id: null,
    custom_id: null,
    unread: 1,
    created_at: incoming.datetime,
  };
}

/** An employee's message to a lead's channel; `replyTo` is the quoted message's snapshot (JSON). */
export function outgoingMessageValues(
  integration: IntegrationRow,
  ids: { leadId: number; sourceId: number; userId: number | null },
  record: { externalId: string | null; text: string; url?: string; attachments: unknown[]; customId: string | null; at: number },
  replyTo: string | null,
): MessageValues {
  return {
    account_id: integration.account_id,
    lead_id: ids.leadId,
    source_id: ids.sourceId,
    integration_id: integration.id,
    external_id: record.externalId,
    incoming: 0,
    text: record.text,
    url: record.url ?? '',
    attachments: JSON.stringify(record.attachments),
    reply_to: replyTo,
    preview: null,
    profile_id: null,
    user_id: ids.userId,
    custom_id: record.customId,
    unread: 0,
    created_at: record.at,
  };
}

/** A new customer's values (without its id); `phone_as_typed` only when it has a phone. */
export type NewCustomerValues = Omit<CustomerRow, 'id' | 'phone_as_typed'> & { phone_as_typed?: string | null };

/** A sender's new customer (without its id). */
export function newCustomerValues(integration: IntegrationRow, s: SenderProfile, now: number): NewCustomerValues {
  const phone = senderPhone(integration, s);
  return {
    account_id: integration.account_id,
    name: s.name ?? s.login ?? '',
    login: s.login ?? '',
    avatar: s.avatar ?? '',
    email: null,
    phone: phone?.phone ?? null,
    // Written only with a phone: a database before migration 0106 (its tests) has no such column.
    ...(phone && { phone_as_typed: phone.asTyped }),
    address: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * The phone of a sender: the one its channel reported (`phone`, a Telegram contact the person
 * shared of themselves), or on a phone-addressed channel its id (WhatsApp and its bridge: the
 * international number, `79161234567`, `+79161234567` or `79161234567@s.whatsapp.net`). Both are
 * international numbers, so they are read as such (E.164) whatever the account's country.
 */
export function senderPhone(integration: IntegrationRow, s: SenderProfile): StoredPhone | undefined {
  if (s.phone !== undefined) return internationalPhone(s.phone, s.phone);
  if (!integrationTypeInfo(integration.type)?.phoneAddressed) return undefined;
  return internationalPhone(s.socialId, s.socialId);
}

function internationalPhone(text: string, asTyped: string): StoredPhone | undefined {
  const digits = /^\s*\+?([0-9][0-9\s\-().]{4,24})(@.*)?$/.exec(text)?.[1]?.replace(/[^0-9]/g, '');
  if (!digits || digits.length < 6 || digits.length > 15) return undefined;
  const p = normalizePhone(`+${digits}`, DEFAULT_COUNTRY);
  return p.parsed ? { ...p, asTyped } : undefined;
}

/** A sender's new profile on the integration (without its id). */
export function newProfileValues(integration: IntegrationRow, customerId: number, s: SenderProfile, now: number): Omit<ProfileRow, 'id'> {
  return {
    account_id: integration.account_id,
    customer_id: customerId,
    integration_id: integration.id,
    type: integration.type,
    social_id: s.socialId,
    login: s.login ?? '',
    name: s.name ?? '',
    avatar: s.avatar ?? '',
    profile_url: s.profileUrl ?? '',
    created_at: now,
  };
}

/** A new channel of the message's conversation (without its id). */
export function newSourceValues(
  integration: IntegrationRow,
  customerId: number,
  incoming: Pick<IncomingMessage, 'channel' | 'sender'>,
  now: number,
): Omit<SourceRow, 'id'> {
  const ch = incoming.channel;
  return {
    account_id: integration.account_id,
    integration_id: integration.id,
    customer_id: customerId,
    external_id: ch.externalId,
    type: ch.type,
    name: ch.name ?? null,
    sender: incoming.sender.socialId,
    token: ch.token ?? null,
    expires_at: ch.expiresAt ?? null,
    created_at: now,
  };
}

/** The profile's fields the provider now reports otherwise (empty when it is as stored). */
export function profilePatch(
  profile: ProfileRow,
  s: SenderProfile,
): Partial<Pick<ProfileRow, 'login' | 'name' | 'avatar' | 'profile_url'>> {
  const patch: Partial<Pick<ProfileRow, 'login' | 'name' | 'avatar' | 'profile_url'>> = {};
  if (s.login !== undefined && s.login !== profile.login) patch.login = s.login;
  if (s.name !== undefined && s.name !== profile.name) patch.name = s.name;
  if (s.avatar !== undefined && s.avatar !== profile.avatar) patch.avatar = s.avatar;
  if (s.profileUrl !== undefined && s.profileUrl !== profile.profile_url) patch.profile_url = s.profileUrl;
  return patch;
}

/**
 * The channel's new reply deadline when the message moves it, else undefined. It only moves
 * forward: a late redelivery of an older message keeps the newer one.
 */
export function movedExpiry(channel: IncomingMessage['channel'], source: Pick<SourceRow, 'expires_at'>): number | undefined {
  const expiresAt = channel.expiresAt;
  if (expiresAt === undefined || expiresAt === null) return undefined;
  return source.expires_at === null || expiresAt > source.expires_at ? expiresAt : undefined;
}
