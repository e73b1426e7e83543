import type { FakeMetaGraph, GraphRoute } from './fake-meta-graph.js';

/**
 * Messenger Platform and Instagram API with Instagram Login on the fake Graph server, following the
 * documented shapes (https://developers.facebook.com/docs/messenger-platform/reference/send-api,
 * https://developers.facebook.com/docs/instagram-platform/instagram-api-with-instagram-login):
 * a Page read with its token, `subscribed_apps`, user profiles, `message_attachments` uploads and
 * the Send API with its windows: `messaging_type: RESPONSE` within 24 hours of the customer's last
 * message, `MESSAGE_TAG` + `HUMAN_AGENT` within 7 days, else error 10 / 2018278 as Meta answers.
 */
export interface FakePage {
  /** Page (Messenger) or Instagram professional account (user_id). */
  id: string;
  token: string;
  name: string;
  picture: string;
  kind: 'page' | 'instagram';
}

export interface FakeUser {
  id: string;
  firstName: string;
  lastName: string;
  username?: string;
  pic: string;
}

const HOUR = 60 * 60 * 1000;

export class FakeMetaPages {
  readonly pages = new Map<string, FakePage>();
  readonly users = new Map<string, FakeUser>();
  /** Sent messages by message id: what the Send API accepted. */
  readonly sent: Array<{ pageId: string; mid: string; body: Record<string, any> }> = [];
  private readonly lastCustomerMessage = new Map<string, number>();
  private seq = 0;

  constructor(
    private readonly graph: FakeMetaGraph,
    /** The fake's clock: tests pass the harness clock so windows follow it. */
    private readonly now: () => number,
  ) {
    graph.products.push((route) => this.handle(route));
  }

  addPage(page: FakePage): void {
    this.pages.set(page.id, page);
  }

  addUser(user: FakeUser): void {
    this.users.set(user.id, user);
  }

  /** The customer wrote to the page at `at` (Unix ms): the Send API's windows open from there. */
  customerWrote(pageId: string, userId: string, at = this.now()): void {
    this.lastCustomerMessage.set(`${pageId}:${userId}`, at);
  }

  /** A file behind a public CDN link, as Messenger/Instagram attachment payloads carry. */
  cdnFile(bytes: Buffer, mime: string): string {
    const id = this.graph.addInboundMedia('cdn', bytes, mime);
    return `${this.graph.url}/cdn/${id}`;
  }

  private handle(r: GraphRoute): boolean {
    const page = [...this.pages.values()].find((p) => p.token === r.token);
    if (!page) return false;
    const [first, edge] = r.path.split('/');
    const id = first === 'me' ? page.id : first!;
    if (r.method === 'GET' && !edge) {
      if (first === 'me' && page.kind === 'instagram') {
        r.json(200, { id: `app-scoped-${page.id}`, user_id: page.id, username: page.name, profile_picture_url: page.picture });
        return true;
      }
      if (id === page.id) {
        r.json(200, {
          name: page.name,
          picture: { data: { url: page.picture, height: 50, width: 50, is_silhouette: false } },
          id: page.id,
        });
        return true;
      }
      const user = this.users.get(id);
      if (user) {
        r.json(
          200,
          page.kind === 'page'
            ? { first_name: user.firstName, last_name: user.lastName, profile_pic: user.pic, id: user.id }
            : { name: `${user.firstName} ${user.lastName}`, username: user.username, profile_pic: user.pic, id: user.id },
        );
        return true;
      }
    }
    if (id !== page.id) {
      r.fail(
        400,
        100,
        `Unsupported ${r.method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        { error_subcode: 33 },
      );
      return true;
    }
    if (r.method === 'POST' && edge === 'subscribed_apps') {
      if (!(r.query.get('subscribed_fields') ?? r.body.subscribed_fields))
        r.fail(400, 100, '(#100) The parameter subscribed_fields is required');
      else r.json(200, { success: true });
      return true;
    }
    if (r.method === 'POST' && edge === 'message_attachments' && page.kind === 'page') {
      const message = JSON.parse(String(r.body.message ?? '{}'));
      const file = r.body.filedata as { filename: string; mime: string; bytes: Buffer } | undefined;
      if (!message.attachment?.type || !file) {
        r.fail(400, 100, '(#100) message.attachment.type and filedata are required');
        return true;
      }
      const attachmentId = String(700_000_000_000 + ++this.seq);
      this.graph.media.set(attachmentId, { ...file, owner: page.token });
      r.json(200, { attachment_id: attachmentId });
      return true;
    }
    if (r.method === 'POST' && edge === 'messages') {
      this.send(page, r);
      return true;
    }
    r.fail(400, 100, 'Unsupported request');
    return true;
  }

  private send(page: FakePage, r: GraphRoute): void {
    const to = String(r.body.recipient?.id ?? '');
    const message = r.body.message;
    if (!to || typeof message !== 'object') {
      r.fail(400, 100, '(#100) recipient and message are required');
      return;
    }
    const last = this.lastCustomerMessage.get(`${page.id}:${to}`);
    const age = last === undefined ? Infinity : this.now() - last;
    const humanAgent = r.body.messaging_type === 'MESSAGE_TAG' && r.body.tag === 'HUMAN_AGENT';
    if (!(age <= 24 * HOUR || (humanAgent && age <= 7 * 24 * HOUR))) {
      r.fail(400, 10, '(#10) This message is sent outside of allowed window.', { error_subcode: 2018278 });
      return;
    }
    if (message.text !== undefined && !(typeof message.text === 'string' && message.text.length <= 2000)) {
      r.fail(400, 100, '(#100) Length of param message[text] must be less than or equal to 2000');
      return;
    }
    const attachmentId = message.attachment?.payload?.attachment_id;
    if (attachmentId !== undefined && !this.graph.media.has(String(attachmentId))) {
      r.fail(400, 100, '(#100) Invalid attachment_id');
      return;
    }
    const mid = `m_${page.kind === 'page' ? 'fb' : 'ig'}${Date.now().toString(36)}${++this.seq}`;
    this.sent.push({ pageId: page.id, mid, body: r.body });
    r.json(200, { recipient_id: to, message_id: mid });
  }
}

/** A `page` (Messenger) or `instagram` webhook of messaging events for one page/account. */
export function messagingWebhook(
  object: 'page' | 'instagram',
  pageId: string,
  messaging: unknown[],
  time = Date.now(),
): Record<string, unknown> {
  return { object, entry: [{ id: pageId, time, messaging }] };
}
