import { ChannelFailedError, ChannelRejectedError } from '../../domain/channels/channel.js';
import { request } from '../bots/http.js';

/**
 * The Telegram Bot API (https://core.telegram.org/bots/api): `POST <root>/bot<token>/<method>`
 * with a JSON or multipart body; answers `{ok: true, result}` or
 * `{ok: false, error_code, description, parameters?: {retry_after, migrate_to_chat_id}}`.
 */

export interface TgUser {
  id: number;
  is_bot?: boolean;
  first_name?: string;
  last_name?: string;
  username?: string;
}

export interface TgFile {
  file_id: string;
  file_unique_id?: string;
  file_size?: number;
  file_path?: string;
}

/** A refusal of the API, with its code and (429) the seconds to wait. */
export class TelegramError extends ChannelRejectedError {
  constructor(
    readonly errorCode: number,
    readonly description: string,
    readonly retryAfter: number | undefined,
  ) {
    super(description);
  }

  override detail(): string {
    return `${this.errorCode} ${this.description}`;
  }

  /** 401 Unauthorized (revoked token), or 404 for a token the API does not know at all. */
  get authFailure(): boolean {
    return this.errorCode === 401 || this.errorCode === 404;
  }
}

export class TelegramApi {
  constructor(
    private readonly root: string,
    private readonly token: string,
    private readonly timeoutMs: number,
  ) {}

  /** Calls a method; `params` as JSON, or a FormData for uploads. */
  async call<T>(
    method: string,
    params: Record<string, unknown> | FormData = {},
    opts: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<T> {
    const multipart = params instanceof FormData;
    const answer = await request(`${this.root}/bot${this.token}/${method}`, {
      headers: multipart ? {} : { 'content-type': 'application/json' },
      body: multipart ? params : JSON.stringify(params),
      timeoutMs: opts.timeoutMs ?? this.timeoutMs,
      signal: opts.signal,
    });
    let body: { ok?: boolean; result?: T; error_code?: number; description?: string; parameters?: { retry_after?: number } };
    try {
      body = JSON.parse(answer.text);
    } catch {
      throw new ChannelFailedError(`Telegram ${method} answered ${answer.status} without JSON`);
    }
    if (body.ok === true) return body.result as T;
    const code = typeof body.error_code === 'number' ? body.error_code : answer.status;
    if (code >= 500) throw new ChannelFailedError(`Telegram ${method} failed: ${code} ${body.description ?? ''}`.trim());
    const retryAfter = typeof body.parameters?.retry_after === 'number' ? body.parameters.retry_after : undefined;
    throw new TelegramError(code, body.description ?? `Telegram answered ${code}`, retryAfter);
  }

  /** The download URL of a file `getFile` answered (valid for at least an hour). */
  fileUrl(filePath: string): string {
    return `${this.root}/file/bot${this.token}/${filePath}`;
  }
}
