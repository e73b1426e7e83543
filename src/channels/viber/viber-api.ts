import { ChannelFailedError, ChannelRejectedError } from '../../domain/channels/channel.js';
import { parseJsonKeepingIds, request } from '../bots/http.js';

/**
 * The Viber REST Bot API (https://developers.viber.com/docs/api/rest-bot-api/): `POST <root>/<method>`
 * with JSON and the `X-Viber-Auth-Token` header. HTTP is 200 even for refusals: the body's
 * `status` (0 ok) and `status_message` tell. `message_token` values are 64-bit integers, kept as
 * strings here.
 */

/** Viber's documented status codes that matter here. */
export const VIBER_STATUS = {
  ok: 0,
  invalidUrl: 1,
  invalidAuthToken: 2,
  badData: 3,
  missingData: 4,
  receiverNotRegistered: 5,
  receiverNotSubscribed: 6,
  publicAccountBlocked: 7,
  publicAccountNotFound: 8,
  publicAccountSuspended: 9,
  tooManyRequests: 12,
} as const;

export class ViberError extends ChannelRejectedError {
  constructor(
    readonly status: number,
    readonly statusMessage: string,
  ) {
    super(statusMessage);
  }

  override detail(): string {
    return `status ${this.status}: ${this.statusMessage}`;
  }

  /** The token is not (or no longer) a bot's. */
  get authFailure(): boolean {
    return this.status === VIBER_STATUS.invalidAuthToken || this.status === VIBER_STATUS.publicAccountNotFound;
  }
}

export class ViberApi {
  constructor(
    private readonly root: string,
    private readonly token: string,
    private readonly timeoutMs: number,
  ) {}

  async call<T extends Record<string, unknown>>(method: string, body: Record<string, unknown> = {}): Promise<T> {
    const answer = await request(`${this.root}/${method}`, {
      headers: { 'content-type': 'application/json', 'x-viber-auth-token': this.token },
      body: JSON.stringify(body),
      timeoutMs: this.timeoutMs,
    });
    if (answer.status >= 500) throw new ChannelFailedError(`Viber ${method} answered ${answer.status}`);
    let parsed: unknown;
    try {
      parsed = parseJsonKeepingIds(answer.text, ['message_token']);
    } catch {
      throw new ChannelFailedError(`Viber ${method} answered ${answer.status} without JSON`);
    }
    const result = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as T & { status?: unknown; status_message?: unknown };
    if (answer.status >= 400 && result.status === undefined) throw new ChannelRejectedError(`Viber ${method} answered ${answer.status}`);
    const status = Number(result.status ?? -1);
    if (status !== VIBER_STATUS.ok) throw new ViberError(status, String(result.status_message ?? `Viber status ${status}`));
    return result;
  }
}
