import type { IntegrationRow } from '../../db/schema.js';
import type { IngestService } from '../../domain/conversations/ingest.service.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../domain/conversations/history-message.js';
import type { DeliveryReport, DeliveryStatusService } from '../../domain/messaging/delivery-status.service.js';
import {
  ChannelRejectedError,
  type Attachment,
  type AttachmentType,
  type ChannelIntegration,
  type IncomingMessage,
} from '../../domain/channels/channel.js';
import { mapUrl, mediaAttachment, type BotKit } from '../bots/bot-kit.js';
import { MalformedWebhookError, type MetaProduct, type MetaWebhookOutcome, type MetaWebhookPayload } from '../meta/meta-webhooks.js';
import type { WhatsAppAdapter } from './whatsapp-adapter.js';
import type { ProviderJson } from '../provider-json.js';

/** The customer-service window: free-form messages may follow a customer's message for 24 hours. */
export const SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** What a `messages` change asks for, checked before anything is stored or downloaded. */
type Step = { kind: 'message'; message: ProviderJson; name: string | undefined } | { kind: 'status'; report: DeliveryReport };

const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

const MEDIA_KINDS: Record<string, { type: AttachmentType; ext: string }> = {
  image: { type: 'photo', ext: 'jpg' },
  video: { type: 'video', ext: 'mp4' },
  audio: { type: 'audio', ext: 'ogg' },
  document: { type: 'doc', ext: 'bin' },
  sticker: { type: 'sticker', ext: 'webp' },
};
const KINDS = new Set(['text', 'location', 'contacts', 'button', 'interactive', 'reaction', ...Object.keys(MEDIA_KINDS)]);

/**
 * WhatsApp Cloud API webhooks (`object: whatsapp_business_account`, field `messages`):
 * `value.messages[]` become incoming messages (media downloaded into Parley's storage before the
 * delivery is answered), `value.contacts[]` name the customers, `value.statuses[]` move outgoing
 * messages' delivery status. Kinds Parley cannot show (`unsupported`, `system`, `order`...) and
 * changes of other fields or other phone numbers are acknowledged and left aside, with the reason.
 */
export class WhatsAppInbound implements MetaProduct {
  readonly types = ['msgra_business_api'];
  readonly objects = ['whatsapp_business_account'];

  constructor(
    private readonly kit: BotKit,
    private readonly adapter: WhatsAppAdapter,
    private readonly parts: {
      ingest: Pick<IngestService, 'ingest'>;
      deliveryStatuses: Pick<DeliveryStatusService, 'record'>;
      /** Another live number of the account by phone number id (one Meta app, several numbers). */
      sibling: (
        row: IntegrationRow,
        phoneNumberId: string,
      ) => Promise<{ row: IntegrationRow; integration: ChannelIntegration } | undefined>;
    },
  ) {}

  async handle(row: IntegrationRow, integration: ChannelIntegration, payload: MetaWebhookPayload): Promise<MetaWebhookOutcome> {
    const outcome: MetaWebhookOutcome = { stored: 0, duplicates: 0, statuses: 0, ignored: [] };
    for (const [phoneNumberId, steps] of this.plan(payload, outcome.ignored)) {
      // A Meta app has one callback URL: changes of its other numbers come here too. They go to
      // the account's integration of that number when it belongs to the same app (same secret).
      const target = phoneNumberId === integration.externalId ? { row, integration } : await this.parts.sibling(row, phoneNumberId);
      if (!target || target.integration.credentials.appSecret !== integration.credentials.appSecret) {
        outcome.ignored.push(`phone number id ${phoneNumberId} is not connected to this account with this Meta app`);
        continue;
      }
      await this.run(target.row, target.integration, steps, outcome);
    }
    return outcome;
  }

  private async run(row: IntegrationRow, integration: ChannelIntegration, steps: Step[], outcome: MetaWebhookOutcome): Promise<void> {
    for (const step of steps) {
      if (step.kind === 'status') {
        if (await this.parts.deliveryStatuses.record(row, step.report)) outcome.statuses++;
        continue;
      }
      const incoming = await this.incoming(integration, step.message, step.name);
      if (!incoming) {
        outcome.ignored.push(`message ${String(step.message.id)}: nothing to show`);
        continue;
      }
      const result = await this.parts.ingest.ingest(row, incoming);
      if (result.duplicate) outcome.duplicates++;
      else outcome.stored++;
    }
  }

  /** Reads the whole payload first: a malformed part refuses the delivery before anything is stored. */
  private plan(payload: MetaWebhookPayload, ignored: string[]): Map<string, Step[]> {
    const byNumber = new Map<string, Step[]>();
    for (const entry of payload.entry) {
      if (entry.changes !== undefined && !Array.isArray(entry.changes)) throw new MalformedWebhookError('entry.changes must be an array');
      for (const change of (entry.changes ?? []) as unknown[]) {
        if (!isObject(change) || typeof change.field !== 'string' || !isObject(change.value)) {
          throw new MalformedWebhookError('a change needs field and value');
        }
        if (change.field !== 'messages') {
          ignored.push(`field ${change.field}`);
          continue;
        }
        const value = change.value;
        const phoneNumberId = str(value.metadata?.phone_number_id);
        if (!phoneNumberId) throw new MalformedWebhookError('value.metadata.phone_number_id is missing');
        const steps = byNumber.get(phoneNumberId) ?? [];
        byNumber.set(phoneNumberId, steps);
        const names = new Map<string, string>();
        for (const contact of list(value.contacts, 'contacts')) {
          const name = str(contact.profile?.name);
          if (str(contact.wa_id) && name) names.set(contact.wa_id, name);
        }
        for (const message of list(value.messages, 'messages')) {
          checkMessage(message);
          if (!KINDS.has(message.type)) {
            ignored.push(`message ${message.id}: kind ${message.type} is not supported`);
            continue;
          }
          const media = MEDIA_KINDS[message.type] ? message[message.type] : undefined;
          if (MEDIA_KINDS[message.type] && !(isObject(media) && /^\d{1,30}$/.test(String(media.id)))) {
            throw new MalformedWebhookError(`${message.type} needs a numeric media id`);
          }
          const loc = message.location;
          if (message.type === 'location' && !(isObject(loc) && typeof loc.latitude === 'number' && typeof loc.longitude === 'number')) {
            throw new MalformedWebhookError('location needs latitude and longitude');
          }
          if (message.type === 'reaction' && !str(message.reaction?.emoji)) {
            ignored.push(`message ${message.id}: a reaction was removed`);
            continue;
          }
          steps.push({ kind: 'message', message, name: names.get(message.from) });
        }
        for (const status of list(value.statuses, 'statuses')) {
          if (!str(status.id) || !str(status.status)) throw new MalformedWebhookError('a status needs id and status');
          if (!(DELIVERY_STATUSES as readonly string[]).includes(status.status)) {
            ignored.push(`status ${status.status} of ${status.id}`);
            continue;
          }
          steps.push({ kind: 'status', report: statusReport(status) });
        }
      }
    }
    return byNumber;
  }

  /** One checked message as Parley stores it; media fetched with the token into Parley's storage. */
  private async incoming(integration: ChannelIntegration, m: ProviderJson, name: string | undefined): Promise<IncomingMessage | undefined> {
    const lines: string[] = [];
    const attachments: Attachment[] = [];
    let replyTo = str(m.context?.id);
    const media = MEDIA_KINDS[m.type];
    if (media) {
      const body = m[m.type];
      attachments.push(await this.download(integration, body, media.type, `${m.type}-${body.id}.${media.ext}`));
      if (str(body.caption)) lines.push(body.caption);
    } else {
      switch (m.type) {
        case 'text':
          lines.push(String(m.text?.body ?? ''));
          break;
        case 'location': {
          const loc = m.location;
          attachments.push({
            type: 'link',
            url: mapUrl(loc.latitude, loc.longitude),
            text: [str(loc.name), str(loc.address)].filter(Boolean).join(', ') || 'Location',
          });
          break;
        }
        case 'contacts':
          for (const c of Array.isArray(m.contacts) ? m.contacts : []) {
            const phones = (Array.isArray(c?.phones) ? c.phones : [])
              .map((p: unknown) => str(isObject(p) ? p.phone : undefined))
              .filter(Boolean);
            lines.push(`Contact: ${[str(c?.name?.formatted_name), ...phones].filter(Boolean).join(', ')}`);
          }
          break;
        case 'button':
          lines.push(String(m.button?.text ?? m.button?.payload ?? ''));
          break;
        case 'interactive': {
          const reply = m.interactive?.button_reply ?? m.interactive?.list_reply ?? m.interactive?.nfm_reply;
          lines.push([str(reply?.title) ?? str(reply?.body) ?? str(reply?.name), str(reply?.description)].filter(Boolean).join('\n'));
          break;
        }
        case 'reaction':
          lines.push(m.reaction.emoji);
          replyTo = str(m.reaction.message_id);
          break;
      }
    }
    const text = lines.join('\n');
    if (!text && !attachments.length) return undefined;
    const at = Number(m.timestamp) * 1000;
    return {
      externalId: m.id,
      datetime: at,
      sender: { socialId: m.from, login: m.from, ...(name ? { name } : {}) },
      channel: { externalId: m.from, type: 'message', expiresAt: at + SERVICE_WINDOW_MS },
      text,
      attachments,
      ...(replyTo ? { replyToExternalId: replyTo } : {}),
      preview: referralPreview(m.referral),
    };
  }

  /** `GET /{media-id}` for the URL, then the download with the same token (Meta requires it). */
  private download(integration: ChannelIntegration, body: ProviderJson, type: AttachmentType, fallbackName: string): Promise<Attachment> {
    const api = this.adapter.api(integration);
    return mediaAttachment(this.kit, integration.accountId, type, {
      url: async () => {
        const info = await api.get<{ url?: string }>(body.id);
        const url = str(info.url);
        if (!url || !/^https?:\/\//i.test(url)) throw new ChannelRejectedError(`media ${body.id} has no URL`);
        return url;
      },
      filename: str(body.filename) || fallbackName,
      mime: str(body.mime_type)?.split(';')[0]?.trim() ?? '',
      headers: { authorization: `Bearer ${integration.credentials.accessToken ?? ''}` },
    });
  }
}

function list(value: unknown, name: string): Array<ProviderJson> {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every(isObject)) throw new MalformedWebhookError(`value.${name} must be an array of objects`);
  return value;
}

function checkMessage(m: ProviderJson): void {
  if (!str(m.id) || !str(m.from) || !str(m.type) || !/^\d{1,12}$/.test(String(m.timestamp ?? ''))) {
    throw new MalformedWebhookError('a message needs id, from, type and timestamp');
  }
  if (m.id.length > 255 || m.from.length > 64) throw new MalformedWebhookError('message id or sender too long');
}

function statusReport(s: ProviderJson): DeliveryReport {
  const report: DeliveryReport = { externalId: s.id, status: s.status as DeliveryStatus };
  if (s.status === 'failed') {
    const e = Array.isArray(s.errors) && isObject(s.errors[0]) ? s.errors[0] : {};
    report.error = {
      code: Number.isSafeInteger(e.code) ? e.code : 0,
      title: String(e.title ?? '').slice(0, 500),
      message: String(e.error_data?.details ?? e.message ?? e.title ?? 'Delivery failed').slice(0, 1000),
    };
  }
  return report;
}

/** A click-to-WhatsApp ad or post the customer came from, as the message's `preview`. */
function referralPreview(referral: unknown): IncomingMessage['preview'] {
  if (!isObject(referral)) return null;
  const preview: Record<string, string> = {};
  const photo = str(referral.image_url) ?? str(referral.thumbnail_url);
  const description = str(referral.body) ?? str(referral.headline);
  if (photo) preview.photo = photo;
  if (description) preview.description = description;
  if (str(referral.source_type)) preview.owner = referral.source_type;
  if (str(referral.source_url)) preview.url = referral.source_url;
  return Object.keys(preview).length ? preview : null;
}
