import { invalid } from '../../domain/errors.js';
import type { ChannelAdapter, ChannelIntegration, ConnectResult, OutgoingMessage, SendResult } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { splitText } from '../bots/http.js';
import { GraphApi, GraphError, guardToken } from '../meta/graph-api.js';

/** Cloud API limits: a text message body, and the caption of an image, video or document. */
export const TEXT_LIMIT = 4096;
export const CAPTION_LIMIT = 1024;
/** Template pages read at most (100 templates each) when listing an account's templates. */
const TEMPLATE_PAGES = 10;

/** An approved message template of the WhatsApp Business Account, as `GET /integrations/<id>/templates` lists it. */
export interface WhatsAppTemplate {
  name: string;
  language: string;
  category: string;
  status: string;
  components: unknown[];
}

const GRAPH_ID = /^\d{1,30}$/;
/** Meta's sample template, present in every WhatsApp Business Account unless its owner deleted it. */
export const TEST_TEMPLATE = { name: 'hello_world', language: 'en_US' } as const;

/**
 * `msgra_business_api`: a business phone number on Meta's WhatsApp Cloud API. Credentials:
 * `accessToken` (a system user's permanent token), `phoneNumberId`, `wabaId` (the WhatsApp Business
 * Account) and `appSecret` (verifies webhook signatures). Messages arrive by the Meta webhook
 * (see MetaWebhooks); sending is `POST /{phoneNumberId}/messages`. Files are uploaded to
 * `POST /{phoneNumberId}/media` and sent by media id. See docs/channels/whatsapp-cloud.md.
 */
export class WhatsAppAdapter implements ChannelAdapter {
  readonly type = 'msgra_business_api';

  constructor(private readonly kit: BotKit) {}

  api(integration: Pick<ChannelIntegration, 'credentials'>): GraphApi {
    const { metaGraphUrl, metaGraphVersion, sendTimeoutMs } = this.kit.config;
    return new GraphApi({
      root: metaGraphUrl,
      version: metaGraphVersion,
      token: integration.credentials.accessToken ?? '',
      timeoutMs: sendTimeoutMs,
    });
  }

  /** Reads the number with the token: a refused token (Graph code 190) -> `auth failure`; other refusals -> 400. */
  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const { phoneNumberId = '', wabaId = '' } = integration.credentials;
    const details = [
      ...(GRAPH_ID.test(phoneNumberId) ? [] : [{ path: 'body.credentials.phoneNumberId', message: 'must be the numeric phone number id' }]),
      ...(GRAPH_ID.test(wabaId) ? [] : [{ path: 'body.credentials.wabaId', message: 'must be the numeric WhatsApp Business Account id' }]),
    ];
    if (details.length) throw invalid('WhatsApp Cloud API ids are numbers', details);
    let number: { display_phone_number?: string; verified_name?: string; id?: string };
    try {
      number = await this.api(integration).get(phoneNumberId, { fields: 'display_phone_number,verified_name' });
    } catch (err) {
      if (err instanceof GraphError && !err.authFailure) throw invalid(`Meta refused the phone number id: ${err.message}`);
      throw err;
    }
    const display = number.display_phone_number ?? '';
    const digits = display.replace(/\D/g, '');
    return {
      login: display || number.verified_name || phoneNumberId,
      externalId: phoneNumberId,
      identifier: wabaId,
      avatar: '',
      url: digits ? `https://wa.me/${digits}` : '',
    };
  }

  /**
   * Text (split at 4096), a file by media id (the text as its caption when it fits), or a template.
   * `replyToExternalId` becomes `context.message_id`, `customId` `biz_opaque_callback_data` (Meta
   * echoes it in the statuses).
   */
  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    requireConnected(integration);
    const base = {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: channel.externalId,
      ...(message.replyToExternalId ? { context: { message_id: message.replyToExternalId } } : {}),
      ...(message.customId ? { biz_opaque_callback_data: message.customId.slice(0, 512) } : {}),
    };
    const ids: string[] = [];
    const sendOne = async (body: Record<string, unknown>) => {
      const answer = await this.guard(integration, () =>
        this.api(integration).post<{ messages?: Array<{ id?: string }> }>(`${integration.externalId}/messages`, { ...base, ...body }),
      );
      ids.push(String(answer.messages?.[0]?.id ?? ''));
    };
    if (message.template) {
      await sendOne({ type: 'template', template: templateBody(message.template) });
      return { externalIds: ids };
    }
    const text = message.text ?? '';
    const attachment = message.attachment;
    const captioned = !!attachment && text.length <= CAPTION_LIMIT;
    const parts = text && !captioned ? splitText(text, TEXT_LIMIT) : [];
    try {
      for (const part of parts) await sendOne({ type: 'text', text: { body: part, preview_url: false } });
      if (attachment) await sendOne(await this.mediaBody(integration, attachment, captioned ? text : ''));
    } catch (err) {
      if (ids.length)
        this.kit.log.warn(
          { integrationId: integration.id, delivered: ids },
          'Meta refused a later part of a message; earlier parts were delivered',
        );
      throw err;
    }
    return parts.length > 1 ? { externalIds: ids, texts: parts } : { externalIds: ids };
  }

  /**
   * The owner's test: Meta's sample template `hello_world` (en_US), which every WhatsApp Business
   * Account is given: a business may write first only with a template (docs/channels/whatsapp-cloud.md).
   */
  async sendTest(integration: ChannelIntegration, to: string): Promise<{ messageId: string }> {
    requireConnected(integration);
    const answer = await this.guard(integration, () =>
      this.api(integration).post<{ messages?: Array<{ id?: string }> }>(`${integration.externalId}/messages`, {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to,
        type: 'template',
        template: { name: TEST_TEMPLATE.name, language: { code: TEST_TEMPLATE.language } },
      }),
    );
    return { messageId: String(answer.messages?.[0]?.id ?? '') };
  }

  /** Approved templates of the account (`GET /{wabaId}/message_templates`), page by page. */
  async templates(integration: ChannelIntegration): Promise<WhatsAppTemplate[]> {
    requireConnected(integration);
    const out: WhatsAppTemplate[] = [];
    let after: string | undefined;
    for (let page = 0; page < TEMPLATE_PAGES; page++) {
      const answer = await this.guard(integration, () =>
        this.api(integration).get<{ data?: Array<Record<string, unknown>>; paging?: { cursors?: { after?: string }; next?: string } }>(
          `${integration.identifier}/message_templates`,
          { fields: 'name,language,status,category,components', status: 'APPROVED', limit: '100', ...(after ? { after } : {}) },
        ),
      );
      for (const t of answer.data ?? []) {
        if (t.status !== 'APPROVED' || typeof t.name !== 'string') continue;
        out.push({
          name: t.name,
          language: String(t.language ?? ''),
          category: String(t.category ?? ''),
          status: 'APPROVED',
          components: Array.isArray(t.components) ? t.components : [],
        });
      }
      after = answer.paging?.next ? answer.paging.cursors?.after : undefined;
      if (!after) break;
    }
    return out;
  }

  /** A refused token marks the integration `auth failure` (and the call is refused: 422). */
  private guard<T>(integration: Pick<ChannelIntegration, 'id'>, call: () => Promise<T>): Promise<T> {
    return guardToken(this.kit, integration.id, call);
  }

  /** Uploads the file to `/{phoneNumberId}/media` and answers the message body naming its media id. */
  private async mediaBody(
    integration: ChannelIntegration,
    attachment: NonNullable<OutgoingMessage['attachment']>,
    caption: string,
  ): Promise<Record<string, unknown>> {
    const fileId = typeof attachment.media.fileId === 'string' ? attachment.media.fileId : '';
    const found = fileId ? await this.kit.readFile(fileId) : undefined;
    if (!found) throw new ChannelRejectedError('The uploaded file is no longer available');
    const mime = found.file.mime || 'application/octet-stream';
    const form = new FormData();
    form.set('messaging_product', 'whatsapp');
    form.set('type', mime);
    form.set('file', new Blob([found.bytes], { type: mime }), found.file.name || 'file');
    const uploaded = await this.guard(integration, () =>
      this.api(integration).postForm<{ id?: string }>(`${integration.externalId}/media`, form),
    );
    if (!uploaded.id) throw new ChannelRejectedError('Meta answered the media upload without an id');
    const kind = attachment.type === 'photo' ? 'image' : attachment.type === 'video' ? 'video' : 'document';
    const media: Record<string, unknown> = { id: uploaded.id, ...(caption ? { caption } : {}) };
    if (kind === 'document') media.filename = (found.file.name || 'file').slice(0, 240);
    return { type: kind, [kind]: media };
  }
}

/** Graph paths are built of the ids connect checked: an integration Meta never accepted has none. */
function requireConnected(integration: Pick<ChannelIntegration, 'externalId' | 'identifier'>): void {
  if (!GRAPH_ID.test(integration.externalId) || !GRAPH_ID.test(integration.identifier)) {
    throw new ChannelRejectedError('This WhatsApp number was never connected (Meta refused its credentials): connect it again');
  }
}

/** Send form B as Cloud API wants it: `component_values` become `components`; `namespace` is not sent. */
function templateBody(template: Record<string, unknown>): Record<string, unknown> {
  const language = (template.language ?? {}) as { code?: string; policy?: string };
  const components = Array.isArray(template.component_values) ? template.component_values : undefined;
  return {
    name: template.name,
    language: { policy: language.policy ?? 'deterministic', code: language.code },
    ...(components?.length ? { components } : {}),
  };
}
