import type { IntegrationRow } from '../../db/schema.js';
import type { IngestService } from '../../domain/conversations/ingest.service.js';
import type { DeliveryStatusService } from '../../domain/messaging/delivery-status.service.js';
import type { Attachment, AttachmentType, ChannelIntegration, IncomingMessage } from '../../domain/channels/channel.js';
import { mapUrl, mediaAttachment, type BotKit } from '../bots/bot-kit.js';
import { MESSAGING_WINDOW_MS, PARLEY_ECHO_METADATA, type MetaMessagingAdapter } from './meta-messaging.js';
import { MalformedWebhookError, type MetaProduct, type MetaWebhookOutcome, type MetaWebhookPayload } from './meta-webhooks.js';
import type { ProviderJson } from '../provider-json.js';

const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** Attachment payloads Parley keeps a copy of (their CDN links expire). */
const DOWNLOADED: Record<string, { type: AttachmentType; ext: string }> = {
  image: { type: 'photo', ext: 'jpg' },
  video: { type: 'video', ext: 'mp4' },
  audio: { type: 'audio', ext: 'mp4' },
  file: { type: 'doc', ext: 'bin' },
};
/** Instagram shares shown as links to what was shared. */
const LINKS: Record<string, string> = {
  story_mention: 'Story mention',
  share: 'Shared post',
  ig_reel: 'Reel',
  reel: 'Reel',
  ig_post: 'Post',
  fallback: 'Link',
  template: 'Link',
};

type Step =
  | { kind: 'message'; event: ProviderJson; customer: string }
  | { kind: 'echo'; event: ProviderJson; customer: string }
  | { kind: 'postback'; event: ProviderJson; customer: string }
  | { kind: 'read' | 'delivered'; customer: string; mids: string[]; watermark: number | undefined };

/**
 * Messenger (`object: page`) and Instagram direct messages (`object: instagram`) webhooks:
 * `entry[].messaging[]` events. A customer's message (text, attachments, quick replies, replies,
 * Instagram story replies and mentions) and a postback are stored as incoming; an `is_echo` message
 * (someone answering in the Page's or account's own inbox) is stored as outgoing once (Parley's own
 * sends come back as echoes too and are recognised by their id); read and delivery receipts move
 * delivery statuses. Other entries (another page, reactions, `changes[]` of other fields) are
 * acknowledged and left aside with the reason.
 */
export class MetaMessagingInbound implements MetaProduct {
  readonly types: readonly string[];

  constructor(
    private readonly kit: BotKit,
    private readonly adapter: MetaMessagingAdapter,
    readonly objects: readonly string[],
    private readonly parts: {
      ingest: Pick<IngestService, 'ingest' | 'recordEcho'>;
      deliveryStatuses: Pick<DeliveryStatusService, 'record' | 'recordUpTo'>;
      /** Whether Parley knows this customer already (their profile is read from Meta once). */
      knownProfile: (integrationId: number, socialId: string) => Promise<boolean>;
    },
  ) {
    this.types = [adapter.type];
  }

  async handle(row: IntegrationRow, integration: ChannelIntegration, payload: MetaWebhookPayload): Promise<MetaWebhookOutcome> {
    const outcome: MetaWebhookOutcome = { stored: 0, duplicates: 0, statuses: 0, ignored: [] };
    const steps = this.plan(integration, payload, outcome.ignored);
    for (const step of steps) {
      if ('mids' in step) {
        for (const mid of step.mids)
          if (await this.parts.deliveryStatuses.record(row, { externalId: mid, status: step.kind })) outcome.statuses++;
        if (step.watermark !== undefined)
          outcome.statuses += await this.parts.deliveryStatuses.recordUpTo(row, step.customer, step.watermark, step.kind);
        continue;
      }
      if (step.kind === 'echo') {
        const content = await this.content(integration, step.event.message);
        if (!content.text && !content.attachments.length) {
          outcome.ignored.push(`echo ${step.event.message.mid}: nothing to show`);
          continue;
        }
        const at = Number(step.event.timestamp);
        const done = await this.parts.ingest.recordEcho(
          row,
          { socialId: step.customer, channelExternalId: step.customer },
          {
            externalId: step.event.message.mid,
            text: content.text,
            attachments: content.attachments,
            replyTo: undefined,
            customId: null,
            at,
          },
        );
        if (done.duplicate) outcome.duplicates++;
        else outcome.stored++;
        continue;
      }
      const incoming = await this.incoming(integration, step);
      if (!incoming) {
        outcome.ignored.push(`message ${String(step.event.message?.mid)}: nothing to show`);
        continue;
      }
      const result = await this.parts.ingest.ingest(row, incoming);
      if (result.duplicate) outcome.duplicates++;
      else outcome.stored++;
    }
    return outcome;
  }

  check(integration: ChannelIntegration, payload: MetaWebhookPayload): void {
    this.plan(integration, payload, []);
  }

  /** Reads the whole payload first: a malformed event refuses the delivery before anything is stored. */
  private plan(integration: ChannelIntegration, payload: MetaWebhookPayload, ignored: string[]): Step[] {
    const steps: Step[] = [];
    for (const entry of payload.entry) {
      if (entry.messaging !== undefined && !(Array.isArray(entry.messaging) && entry.messaging.every(isObject))) {
        throw new MalformedWebhookError('entry.messaging must be an array of objects');
      }
      if (entry.changes !== undefined) ignored.push(`changes of entry ${String(entry.id)}`);
      if (!entry.messaging) continue;
      if (String(entry.id) !== integration.externalId) {
        ignored.push(`entry ${String(entry.id)} is not this integration's account`);
        continue;
      }
      for (const event of entry.messaging as Array<ProviderJson>) {
        const sender = str(event.sender?.id);
        const recipient = str(event.recipient?.id);
        if (
          !sender ||
          !recipient ||
          sender.length > 64 ||
          recipient.length > 64 ||
          !Number.isSafeInteger(event.timestamp) ||
          event.timestamp < 0
        ) {
          throw new MalformedWebhookError('a messaging event needs sender.id, recipient.id and timestamp');
        }
        const echo = isObject(event.message) && event.message.is_echo === true;
        const customer = echo ? recipient : sender;
        if (isObject(event.message)) {
          checkMessage(event.message);
          if (event.message.is_deleted === true || event.message.is_unsupported === true) {
            ignored.push(`message ${event.message.mid}: deleted or unsupported`);
            continue;
          }
          if (echo && event.message.metadata === PARLEY_ECHO_METADATA) {
            // Parley stores its own sends itself (with the employee and customId): no second copy.
            ignored.push(`echo ${event.message.mid}: sent by Parley`);
            continue;
          }
          steps.push({ kind: echo ? 'echo' : 'message', event, customer });
        } else if (isObject(event.postback)) {
          if (!str(event.postback.title) && !str(event.postback.payload))
            throw new MalformedWebhookError('a postback needs title or payload');
          steps.push({ kind: 'postback', event, customer });
        } else if (isObject(event.read) || isObject(event.delivery)) {
          const report = (event.read ?? event.delivery) as ProviderJson;
          const mids = report.mids === undefined ? (str(report.mid) ? [report.mid] : []) : report.mids;
          const watermark = report.watermark;
          if (
            !Array.isArray(mids) ||
            !mids.every((m) => typeof m === 'string' && m.length <= 255) ||
            (watermark !== undefined && !Number.isSafeInteger(watermark))
          ) {
            throw new MalformedWebhookError('a receipt needs mids[] or a watermark');
          }
          steps.push({ kind: event.read ? 'read' : 'delivered', customer, mids, watermark });
        } else {
          ignored.push(
            `event of ${sender}: ${
              Object.keys(event)
                .filter((k) => !['sender', 'recipient', 'timestamp'].includes(k))
                .join(',') || 'empty'
            }`,
          );
        }
      }
    }
    return steps;
  }

  private async incoming(
    integration: ChannelIntegration,
    step: Extract<Step, { kind: 'message' | 'postback' }>,
  ): Promise<IncomingMessage | undefined> {
    const event = step.event;
    const at = Number(event.timestamp);
    let externalId: string;
    let content: { text: string; attachments: Attachment[] };
    let replyTo: string | undefined;
    if (step.kind === 'postback') {
      // A button press: its title is what the customer saw; postbacks without mid get a stable id.
      externalId = str(event.postback.mid) ?? `postback:${step.customer}:${at}`;
      content = { text: str(event.postback.title) ?? String(event.postback.payload), attachments: [] };
    } else {
      externalId = event.message.mid;
      content = await this.content(integration, event.message);
      replyTo = str(event.message.reply_to?.mid);
    }
    if (!content.text && !content.attachments.length) return undefined;
    // A new customer's name and picture are read once; later messages leave the profile as it is.
    const known = await this.parts.knownProfile(integration.id, step.customer);
    const sender = known
      ? { socialId: step.customer }
      : { socialId: step.customer, login: step.customer, ...((await this.adapter.fetchProfile(integration, step.customer)) ?? {}) };
    return {
      externalId,
      datetime: at,
      sender,
      channel: { externalId: step.customer, type: 'message', expiresAt: at + MESSAGING_WINDOW_MS },
      text: content.text,
      attachments: content.attachments,
      ...(replyTo ? { replyToExternalId: replyTo } : {}),
    };
  }

  /** Text and attachments of a message; files are copied into Parley's storage. */
  private async content(integration: ChannelIntegration, m: ProviderJson): Promise<{ text: string; attachments: Attachment[] }> {
    const lines: string[] = str(m.text) ? [m.text] : [];
    const attachments: Attachment[] = [];
    const story = m.reply_to?.story;
    if (isObject(story) && str(story.url)) attachments.push({ type: 'link', url: story.url, text: 'Story reply' });
    for (const [i, a] of (Array.isArray(m.attachments) ? m.attachments : []).entries()) {
      const url = str(a.payload?.url);
      const coordinates = a.payload?.coordinates;
      if (a.type === 'location' && typeof coordinates?.lat === 'number' && typeof coordinates?.long === 'number') {
        attachments.push({ type: 'link', url: mapUrl(coordinates.lat, coordinates.long), text: str(a.title) ?? 'Location' });
      } else if (url && /^https?:\/\//i.test(url) && DOWNLOADED[a.type]) {
        const kind = a.payload.sticker_id ? { type: 'sticker' as const, ext: 'png' } : DOWNLOADED[a.type];
        attachments.push(
          await mediaAttachment(this.kit, integration.accountId, kind.type, {
            url: async () => url,
            filename: `${a.type}-${m.mid.slice(-12)}-${i}.${kind.ext}`,
            mime: '',
          }),
        );
      } else if (url && /^https?:\/\//i.test(url)) {
        attachments.push({ type: 'link', url, text: str(a.title) ?? str(a.payload?.title) ?? LINKS[a.type] ?? 'Link' });
      }
    }
    return { text: lines.join('\n'), attachments };
  }
}

function checkMessage(m: ProviderJson): void {
  if (!str(m.mid) || m.mid.length > 255) throw new MalformedWebhookError('a message needs mid');
  if (m.text !== undefined && typeof m.text !== 'string') throw new MalformedWebhookError('message.text must be a string');
  if (
    m.attachments !== undefined &&
    !(Array.isArray(m.attachments) && m.attachments.every((a: unknown) => isObject(a) && typeof a.type === 'string'))
  ) {
    throw new MalformedWebhookError('message.attachments must be objects with a type');
  }
}
