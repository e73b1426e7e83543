import crypto from 'node:crypto';
import type { IntegrationRow, LeadRow, MessageRow, SourceRow } from '../../db/schema.js';
import { ChannelCredentialsError, type Attachment, type OutgoingMessage, type SendResult } from '../channels/channel.js';
import { healthOf } from '../channels/health-messages.js';
import { integrationTypeInfo } from '../channels/integration-types.js';
import type { ChannelRegistry } from '../channels/registry.js';
import type { AccountsService } from '../accounts/accounts.service.js';
import { accountStatus, parsePlan } from '../accounts/plan.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import {
  historyPresenter,
  presentHistoryMessage,
  presentSource,
  type HistoryMessage,
  type SourceObject,
} from '../conversations/history-message.js';
import type { IngestService } from '../conversations/ingest.service.js';
import { accountExpired, AppError, forbidden, invalid, notFound } from '../errors.js';
import type { FilesService } from '../files/files.service.js';
import { uploadTypeOf } from '../files/media.js';
import { channelAppError, isChannelError } from '../integrations/channel-errors.js';
import { findIntegration } from '../integrations/integrations.repo.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import { canUseIntegration, requireScope, scopeOf, visibleLead } from '../policy/policy.js';
import { findUser } from '../users/users.repo.js';
import * as repo from './messaging.repo.js';
import {
  HISTORY_PAGE_SIZE,
  type AttachmentInput,
  type CheckContactInput,
  type HistoryPage,
  type MessageInput,
  type PostedMessage,
  type PostInput,
  type SendInput,
  type SendOptions,
  type TemplateInput,
} from './messaging.types.js';
import { outgoingRecords, parseId, requireId, withTimeout, type OutgoingContent } from './outgoing.js';
import { WriteFirst } from './write-first.js';
import { sourcesOfLeads, type LeadSources } from './lead-sources.js';
import { normalizePhone } from '../customers/phone.js';
import { defaultCountryOf } from '../accounts/account-settings.js';
import { PrivateReplyService } from './private-reply.js';
import { latestIncoming } from './private-reply.repo.js';
import { SendKeys } from './send-keys.js';

export interface MessagingParts {
  accounts: AccountsService;
  integrations: IntegrationsService;
  channels: ChannelRegistry;
  ingest: IngestService;
  /** Uploaded files: a send's `media` names one. */
  files: Pick<FilesService, 'resolveMedia' | 'attachmentOf'>;
}

type ChannelRef = { externalId: string; type: string; token: string | null };

/**
 * The messaging API (docs/api/messaging.md "Sending", "Message history"; docs/api/messaging.md): a lead's
 * channels and their history, sending (synchronous, with a timeout, stored only once the channel
 * accepted), writing first, and contact checks. Every operation applies the access policy.
 */
export class MessagingService {
  /** Sends under way by idempotency key: a concurrent repeat waits for the first instead of sending twice. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly writeFirst: WriteFirst;
  private readonly sendKeys: SendKeys;
  private readonly privateReplies: PrivateReplyService;

  constructor(
    private readonly deps: Deps,
    private readonly parts: MessagingParts,
  ) {
    this.writeFirst = new WriteFirst(deps, parts.ingest);
    this.sendKeys = new SendKeys(deps);
    this.privateReplies = new PrivateReplyService(deps, parts);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  async sources(auth: AuthContext, leadId: number): Promise<SourceObject[]> {
    const lead = await visibleLead(this.db, await scopeOf(this.db, auth), leadId);
    const integration = await repo.integrationOfLead(this.db, lead);
    return (await repo.leadSources(this.db, lead)).map((s) => presentSource(s, integration));
  }

  /** The channels of several leads in one answer (lead-sources.ts). */
  async sourcesOfLeads(auth: AuthContext, leadIds: number[]): Promise<LeadSources[]> {
    return sourcesOfLeads(this.db, await scopeOf(this.db, auth), leadIds);
  }

  /**
   * A page of a channel's history, newest first. The cursor is the id of the oldest message of the
   * previous page, so a page never repeats or skips a message whatever arrives meanwhile; only ids
   * of this lead's messages on this channel are accepted as cursors. Three queries: the lead with
   * its integration, channel and cursor check; the messages; their senders' profiles. PostgreSQL
   * reads the messages with their senders' profiles, and for a caller who sees every lead all three
   * in one statement (`repo.historyTarget`).
   */
  async history(auth: AuthContext, leadId: number, realId: number, cursor: number | undefined): Promise<HistoryPage> {
    const target = await repo.historyTarget(this.db, await scopeOf(this.db, auth), leadId, realId, cursor, cursor !== -1);
    if (!target) throw notFound('Lead not found');
    const { source, integration } = target;
    if (!source) throw notFound('Source not found for this lead');
    if (cursor === -1) return { cursor: -1, source: source.id, messages: [] };
    if (cursor !== undefined && !target.cursorKnown) {
      throw invalid('Unknown cursor', [{ path: 'body.cursor', message: 'was not issued for this lead and source' }]);
    }
    const { rows, profiles } =
      target.page ?? (await repo.historyPageWithProfiles(this.db, target.leadId, source.id, cursor, HISTORY_PAGE_SIZE));
    const page = rows.length > HISTORY_PAGE_SIZE ? rows.slice(0, HISTORY_PAGE_SIZE) : rows;
    const present = historyPresenter(source, integration);
    return {
      cursor: rows.length > HISTORY_PAGE_SIZE ? page[page.length - 1].id : -1,
      source: source.id,
      messages: page.map((m) => present(m, m.profile_id === null ? undefined : profiles.get(m.profile_id))),
    };
  }

  /** Sends to a lead's channel (send forms A and B). Answers the stored History messages. */
  async send(auth: AuthContext, leadId: number, input: SendInput, opts: SendOptions): Promise<HistoryMessage[]> {
    const scope = await scopeOf(this.db, auth);
    const target = await repo.visibleSendTarget(this.db, scope, leadId);
    if (!target) throw notFound('Lead not found');
    const { lead } = target;
    const content = checkContent(input.message, input.template);
    const userId = opts.byAutomation ? null : await this.sender(auth, input.userId);
    const source = await this.resolveSource(lead, target.sources, input.source);
    if (opts.honourSaId && input.saId !== undefined && input.saId !== null) {
      if (requireId(input.saId, 'body.saId') !== source.integration_id) {
        throw invalid('saId does not match the channel', [{ path: 'body.saId', message: "is not the channel's integration" }]);
      }
    }
    const { integration } = target;
    if (input.template && !integrationTypeInfo(integration.type)?.templates) {
      throw invalid(`Integration type ${integration.type} does not send template messages`, [
        { path: 'body.template', message: 'is not supported by this integration' },
      ]);
    }
    const replyTo =
      input.replyId === undefined || input.replyId === null
        ? await this.commentAnswered(lead, source, integration)
        : await this.replyTarget(lead, input.replyId);
    const file = await this.resolveAttachment(auth.accountId, input.message?.attachment);
    if (file) content.attachment = file.attachment;
    const customId = input.customId || null;
    if (input.private === true && opts.privateReplies) {
      this.requireActivePlan(target.plan);
      const common = {
        lead,
        source,
        integration,
        // Automation never answers privately (rule replies carry no `private`).
        userId: userId ?? auth.userId,
        text: content.text,
        replyTo,
        customId,
        mayUse: (id: number) => canUseIntegration(scope, id),
      };
      return this.privateReplies.send({ ...common, hasAttachment: !!file, hasTemplate: !!input.template });
    }

    return this.once(customId === null ? undefined : `send:${lead.id}:${customId}`, async () => {
      if (customId !== null) {
        const stored = async () => {
          const done = await repo.messagesByCustomId(this.db, lead.id, customId);
          return done.length ? this.presentStored(done, integration) : undefined;
        };
        const done = await this.sendKeys.claimOrStored(lead.id, customId, stored);
        if (done) return done;
      }
      try {
        this.requireActivePlan(target.plan);
        const late = this.requireOpenWindow(integration, source, !!input.template);
        const message: OutgoingMessage = {
          ...(content.text ? { text: content.text } : {}),
          ...(file ? { attachment: file.outgoing } : {}),
          ...(input.template ? { template: templateMessage(input.template) } : {}),
          ...(replyTo?.external_id ? { replyToExternalId: replyTo.external_id } : {}),
          sendId: customId === null ? crypto.randomUUID() : `lead:${lead.id}:custom:${customId}`,
          ...(customId !== null ? { customId } : {}),
          ...(late ? { late } : {}),
        };
        const channel = { externalId: source.external_id, type: source.type, token: source.token };
        const sent = await this.deliver(integration, channel, message);
        const records = outgoingRecords(content, sent.externalIds, { replyTo, customId, at: this.deps.clock.now(), texts: sent.texts });
        return await this.parts.ingest.storeOutgoing({
          integration,
          source,
          leadId: lead.id,
          userId,
          records,
          ...(customId !== null ? { customId } : {}),
        });
      } catch (err) {
        if (customId !== null) await this.sendKeys.release(lead.id, customId).catch(() => {});
        throw err;
      }
    });
  }

  /**
   * Writes first to a contact (docs/api/messaging.md): only integration types that may, within their
   * daily limit of new contacts. Finds or creates the customer, profile, channel and lead.
   */
  async post(auth: AuthContext, input: PostInput): Promise<PostedMessage[]> {
    const integration = await this.usableIntegration(auth, input.saId);
    const info = integrationTypeInfo(integration.type);
    if (!info?.writeFirst) {
      throw invalid(`Integration type ${integration.type} cannot write first`, [
        { path: 'body.saId', message: 'is not an integration that may write first (msgra, msgrb_personal)' },
      ]);
    }
    const limit = info.writeFirst.dailyLimit;
    const content = checkContent(input.message, undefined);
    const typed = input.destination.trim();
    if (!typed) throw invalid('destination is empty', [{ path: 'body.destination', message: 'is required' }]);
    const destination = await this.contactAddress(integration, typed);
    const file = await this.resolveAttachment(auth.accountId, input.message?.attachment);
    if (file) content.attachment = file.attachment;
    const customId = input.customId || null;
    const message: OutgoingMessage = {
      ...(content.text ? { text: content.text } : {}),
      ...(file ? { attachment: file.outgoing } : {}),
      sendId: customId === null ? crypto.randomUUID() : `post:${integration.id}:${destination}:custom:${customId}`,
    };

    return this.once(customId === null ? undefined : `post:${integration.id}:${destination}:${customId}`, async () => {
      const known = await this.writeFirst.knownContact(integration, destination);
      await this.requireActiveAccount(auth.accountId);
      this.adapterFor(integration);
      // The customId is claimed by a unique constraint: a repeat, even on another process, sends nothing.
      let claimId: number | undefined;
      if (customId !== null) {
        const claim = await this.writeFirst.claim(integration, destination, customId);
        if (!('claimId' in claim))
          return (await this.presentStored(claim.messages, integration)).map((m) => ({ ...m, leadId: claim.leadId }));
        claimId = claim.claimId;
      }
      const channel = { externalId: known.channelExternalId, type: 'message', token: known.channelToken };
      let reservation: number | undefined;
      let sent: SendResult;
      try {
        reservation = await this.writeFirst.reserve(integration, destination, limit);
        sent = await this.deliver(integration, channel, message);
      } catch (err) {
        await this.writeFirst.release(reservation);
        await this.writeFirst.releaseClaim(claimId);
        throw err;
      }
      const records = outgoingRecords(content, sent.externalIds, {
        replyTo: undefined,
        customId,
        at: this.deps.clock.now(),
        texts: sent.texts,
      });
      // A new contact's canonical chat id from the bridge, when it differs: the answer arrives on it.
      const canonical = !known.lead && sent.chatId ? sent.chatId : undefined;
      return this.writeFirst.store(
        integration,
        { socialId: canonical ?? destination, channelExternalId: canonical ?? channel.externalId, customerId: known.customerId },
        auth.userId,
        records,
        claimId,
      );
    });
  }

  /** Whether the integration's channel can reach the contact: true, or 404. */
  async checkContact(auth: AuthContext, input: CheckContactInput): Promise<true> {
    const integration = await this.usableIntegration(auth, input.saId);
    const adapter = this.parts.channels.get(integration.type);
    if (!adapter?.checkContact) {
      throw invalid(`Integration type ${integration.type} cannot check contacts`, [
        { path: 'body.saId', message: 'is not an integration that can check contacts' },
      ]);
    }
    const typed = String(input.chatId).trim();
    if (!typed) throw invalid('chatId is empty', [{ path: 'body.chatId', message: 'is required' }]);
    const chatId = await this.contactAddress(integration, typed);
    let exists: boolean;
    try {
      const check = adapter.checkContact(this.parts.integrations.channelIntegration(integration), chatId);
      exists = await withTimeout(check, this.deps.config.sendTimeoutMs, this.deps.log, { integrationId: integration.id });
    } catch (err) {
      throw channelAppError(err);
    }
    if (!exists) throw notFound('The channel cannot reach this contact');
    return true;
  }

  // --- the steps -------------------------------------------------------------------------------

  /**
   * A write-first destination or checked contact as the channel names it: a phone on a
   * phone-addressed type (WhatsApp), or any destination typed with `+`, in E.164 read in the
   * account's default country, so that "77051234567", "+7 705 123-45-67" and the chat the person
   * answers from (`+77051234567`) are one contact (docs/api/search.md "Write first"). Anything
   * else (a login, a chat id) as typed.
   */
  private async contactAddress(integration: IntegrationRow, typed: string): Promise<string> {
    if (!/^[\s+()\-.0-9]+$/.test(typed)) return typed;
    if (!integrationTypeInfo(integration.type)?.phoneAddressed && !typed.startsWith('+')) return typed;
    const phone = normalizePhone(typed, await defaultCountryOf(this.deps, integration.account_id));
    return phone.parsed ? phone.phone : typed;
  }

  /** A live integration of the account that the caller may use; otherwise 404. */
  private async usableIntegration(auth: AuthContext, saIdInput: PostInput['saId']): Promise<IntegrationRow> {
    const saId = requireId(saIdInput, 'body.saId');
    const integration = await findIntegration(this.db, auth.accountId, saId);
    if (!integration || !canUseIntegration(await scopeOf(this.db, auth), integration.id)) throw notFound('Integration not found');
    return integration;
  }

  /** Who a send is recorded as: the caller, or (owner only) a confirmed employee of the account. */
  private async sender(auth: AuthContext, input: SendInput['userId']): Promise<number> {
    if (input === undefined || input === null) return auth.userId;
    const userId = requireId(input, 'body.userId');
    if (userId === auth.userId) return userId;
    if (auth.role !== 'owner') throw forbidden('A manager may send only as itself');
    // Speaking for another employee is an owner's power: an app needs the owner's `admin` consent.
    requireScope(auth, 'admin');
    const user = await findUser(this.db, auth.accountId, userId);
    if (!user?.confirmed) {
      throw invalid('userId is not a confirmed employee of this account', [
        { path: 'body.userId', message: 'is not a confirmed employee' },
      ]);
    }
    return userId;
  }

  /**
   * The channel a send goes to: `source` as realId, else as the channel's own id, among the lead's
   * channels only; when absent, the `message` channel the lead spoke on last.
   */
  private async resolveSource(lead: LeadRow, sources: SourceRow[], input: SendInput['source']): Promise<SourceRow> {
    if (input === undefined || input === null || input === '') {
      const candidates = sources.filter((s) => s.type === 'message');
      if (!candidates.length) {
        throw invalid('This lead has no message channel: give source', [{ path: 'body.source', message: 'is required for this lead' }]);
      }
      if (candidates.length === 1) return candidates[0] as SourceRow;
      const last = await repo.latestMessagePerSource(this.db, lead.id);
      const rank = (s: SourceRow) => last.get(s.id) ?? 0;
      return candidates.reduce((best, s) => (rank(s) > rank(best) || (rank(s) === rank(best) && s.id > best.id) ? s : best));
    }
    const text = String(input).trim();
    const realId = parseId(text);
    const found =
      (realId !== undefined ? sources.find((s) => s.id === realId) : undefined) ??
      sources.find((s) => s.external_id === text && s.type === 'message') ??
      sources.find((s) => s.external_id === text);
    if (!found) throw invalid('source is not a channel of this lead', [{ path: 'body.source', message: 'is not a channel of this lead' }]);
    return found;
  }

  /**
   * An answer on a comment channel that can be answered privately (Meta's comment channels) replies
   * to the customer's latest comment there when no replyId names one.
   */
  private async commentAnswered(lead: LeadRow, source: SourceRow, integration: IntegrationRow): Promise<MessageRow | undefined> {
    if (source.type === 'message' || !this.parts.channels.get(integration.type)?.privateReplies) return undefined;
    return latestIncoming(this.db, lead.id, source.id);
  }

  private async replyTarget(lead: LeadRow, input: NonNullable<SendInput['replyId']>): Promise<MessageRow> {
    const id = parseId(input);
    const quoted = id === undefined ? undefined : await repo.messageOfLead(this.db, lead.id, id);
    if (!quoted)
      throw invalid('replyId is not a message of this lead', [{ path: 'body.replyId', message: 'is not a message of this lead' }]);
    return quoted;
  }

  /**
   * The uploaded file a message's `media` names (any upload shape), as the attachment to store and
   * what the channel gets: the file's id, public URL, name, type and size (whatever shape the
   * client echoed). Media naming no file of the account: 400.
   */
  private async resolveAttachment(
    accountId: number,
    input: AttachmentInput | undefined,
  ): Promise<{ attachment: Attachment; outgoing: NonNullable<OutgoingMessage['attachment']> } | undefined> {
    if (!input) return undefined;
    const file = await this.parts.files.resolveMedia(accountId, input.media);
    if (!file) {
      throw invalid('media names no uploaded file of this account', [
        { path: 'body.message.attachment.media', message: 'is not an uploaded file' },
      ]);
    }
    const type = (input.type ?? uploadTypeOf(file.mime)) as 'photo' | 'doc' | 'video';
    return {
      attachment: this.parts.files.attachmentOf(file, type),
      outgoing: { type, media: { fileId: file.id, url: file.url, name: file.name, mime: file.mime, size: file.size } },
    };
  }

  /**
   * A channel with an answer deadline (`expires`: WhatsApp's 24-hour customer-service window) takes
   * free-form messages only before it; templates always go. Refused here, without the provider.
   * Answers true when the message goes after the deadline within the channel's late allowance.
   */
  private requireOpenWindow(integration: IntegrationRow, source: SourceRow, isTemplate: boolean): boolean {
    const now = this.deps.clock.now();
    if (isTemplate || source.expires_at === null || source.expires_at > now) return false;
    // Some channels allow late answers for a while after the deadline (Messenger's HUMAN_AGENT tag).
    const late = this.parts.channels.get(integration.type)?.lateReply?.(this.parts.integrations.channelIntegration(integration));
    if (late) {
      if (source.expires_at + late.withinMs > now) return true;
      throw cannotSend(late.closedReason);
    }
    throw cannotSend(
      integrationTypeInfo(integration.type)?.templates
        ? 'outside the 24-hour window: send a template'
        : 'The time to answer on this channel has passed',
    );
  }

  private async requireActiveAccount(accountId: number): Promise<void> {
    if ((await this.parts.accounts.status(accountId)) === 'expired') throw accountExpired();
  }

  /** requireActiveAccount with the account's plan already read (the send's target). */
  private requireActivePlan(plan: string): void {
    if (accountStatus(parsePlan(plan), this.deps.clock.now()) === 'expired') throw accountExpired();
  }

  private adapterFor(integration: IntegrationRow) {
    const adapter = this.parts.channels.get(integration.type);
    if (integration.deleted_at !== null) throw cannotSend('The integration of this conversation was disconnected');
    if (!adapter) throw cannotSend(`This integration (${integration.type}) cannot send messages`);
    return adapter;
  }

  /** Hands a message to the channel: its provider ids (and split texts), or the channel's failure as 422/502/504. */
  private async deliver(integration: IntegrationRow, channel: ChannelRef, message: OutgoingMessage): Promise<SendResult> {
    const adapter = this.adapterFor(integration);
    try {
      const work = adapter.send(this.parts.integrations.channelIntegration(integration), channel, message);
      const result = await withTimeout(work, this.deps.config.sendTimeoutMs, this.deps.log, {
        integrationId: integration.id,
        channel: channel.externalId,
      });
      const externalIds = Array.isArray(result?.externalIds) ? result.externalIds.map(String) : [];
      const texts = Array.isArray(result?.texts) ? result.texts.map(String) : undefined;
      const chatId = typeof result?.chatId === 'string' && result.chatId ? { chatId: result.chatId } : {};
      await this.parts.integrations.health.outbound(integration);
      return texts ? { externalIds, texts, ...chatId } : { externalIds, ...chatId };
    } catch (err) {
      // A refused token was recorded where it was met (the adapter's guard); other failures here.
      if (isChannelError(err) && !(err instanceof ChannelCredentialsError)) {
        await this.parts.integrations.health.failed(
          integration.id,
          healthOf(integration.type, err, 'send', this.deps.config.sendTimeoutMs),
        );
      }
      throw channelAppError(err);
    }
  }

  /** Messages stored by an earlier send, presented again (an idempotent repeat). */
  private async presentStored(rows: MessageRow[], integration: IntegrationRow): Promise<HistoryMessage[]> {
    const sources = await repo.sourcesByIds(this.db, [...new Set(rows.map((m) => m.source_id))]);
    return rows.map((m) => {
      const source = sources.get(m.source_id);
      if (!source) throw new Error(`message ${m.id} names source ${m.source_id}, which is gone`);
      return presentHistoryMessage(m, source, integration, undefined);
    });
  }

  /** Runs `work` once per key at a time: a repeat that arrives while the first runs gets its answer. */
  private once<T>(key: string | undefined, work: () => Promise<T>): Promise<T> {
    if (key === undefined) return work();
    const running = this.inFlight.get(key) as Promise<T> | undefined;
    if (running) return running;
    const started = work().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, started);
    return started;
  }
}

const cannotSend = (message: string) => new AppError(422, 'channel_rejected', message);

/** The template as the channel gets it: the default language policy filled in (docs/api/messaging.md "Sending"). */
function templateMessage(template: TemplateInput): Record<string, unknown> {
  return { ...template, language: { ...template.language, policy: template.language.policy ?? 'deterministic' } };
}

/** A message needs text, an attachment or a template; a template replaces the message. */
function checkContent(message: MessageInput | null | undefined, template: TemplateInput | null | undefined): OutgoingContent {
  if (message && template) {
    throw invalid('Give either message or template, not both', [{ path: 'body.template', message: 'cannot be combined with message' }]);
  }
  if (template) return { text: '', templateName: template.name };
  const text = message?.text ?? '';
  if (!text.trim() && !message?.attachment) {
    throw invalid('A message needs text, an attachment or a template', [{ path: 'body.message', message: 'needs text or an attachment' }]);
  }
  return { text };
}
