import { ChannelFailedError } from '../../domain/channels/channel.js';
import { request } from '../bots/http.js';
import { isObject, jsonAnswer, ProviderRefusal, uploadFile, type RefusalKind } from '../social/social-kit.js';

/**
 * The OK Graph API for groups (Bot API, https://apiok.ru/en/dev/graph_api/bot_api):
 * `<root>/graph/me/<edge>?access_token=<group token>`, POST bodies as
 * `application/json;charset=utf-8`. Refusals answer `{error_code, error_msg, error_data}`.
 */

/** OK error codes Parley acts on (https://apiok.ru/en/dev/errors): session/token, flood. */
const AUTH_ERRORS = new Set([102, 103, 104]);
const RATE_ERRORS = new Set([8]);

const kindOf = (code: number): RefusalKind => (AUTH_ERRORS.has(code) ? 'auth' : RATE_ERRORS.has(code) ? 'rate' : 'refused');

export class OkError extends ProviderRefusal {
  constructor(code: number, message: string) {
    super('OK', code, message, kindOf(code));
  }
}

export class OkApi {
  constructor(
    private readonly root: string,
    private readonly token: string,
    private readonly timeoutMs: number,
  ) {}

  private url(edge: string, query: Record<string, string> = {}): string {
    const url = new URL(`${this.root}/graph/me/${edge}`);
    url.searchParams.set('access_token', this.token);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    return url.toString();
  }

  async get<T>(edge: string, query: Record<string, string> = {}, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    const answer = await request(this.url(edge, query), {
      method: 'GET',
      timeoutMs: opts.timeoutMs ?? this.timeoutMs,
      signal: opts.signal,
    });
    return this.read<T>(edge, answer);
  }

  async post<T>(edge: string, body: Record<string, unknown>): Promise<T> {
    const answer = await request(this.url(edge), {
      headers: { 'content-type': 'application/json;charset=utf-8' },
      body: JSON.stringify(body),
      timeoutMs: this.timeoutMs,
    });
    return this.read<T>(edge, answer);
  }

  /** Uploads a file to the address `fileUploadUrl` gave; its JSON answer. */
  async upload(url: string, file: { bytes: Buffer; name: string; mime: string }): Promise<Record<string, unknown>> {
    const body = jsonAnswer('OK', 'upload', await uploadFile(url, 'data', file, this.timeoutMs));
    if (!isObject(body)) throw new ChannelFailedError('OK upload answered no object');
    if (body.error_code !== undefined) throw new OkError(Number(body.error_code), String(body.error_msg ?? 'upload refused'));
    return body;
  }

  private read<T>(edge: string, answer: { status: number; text: string }): T {
    const body = jsonAnswer('OK', edge, answer);
    if (isObject(body) && body.error_code !== undefined) {
      const code = Number(body.error_code);
      throw new OkError(code, String(body.error_msg ?? `OK error ${code}`));
    }
    if (answer.status >= 400) throw new OkError(answer.status, `OK ${edge} answered ${answer.status}`);
    return body as T;
  }
}
