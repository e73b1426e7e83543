import { ChannelFailedError } from '../../domain/channels/channel.js';
import { request } from '../bots/http.js';
import { isObject, jsonAnswer, postForm, ProviderRefusal, uploadFile, type FormParams, type RefusalKind } from '../social/social-kit.js';

/**
 * The VK API (https://dev.vk.com/en/api/api-requests): `POST <root>/<method>` with a
 * form-encoded body carrying `access_token` and `v` (never JSON). Answers `{response}` or the error
 * envelope `{error: {error_code, error_msg, request_params}}`, with HTTP 200 either way.
 */

/** VK error codes Parley acts on (https://dev.vk.com/en/reference/errors). */
export const VK_ERRORS = {
  unknown: 1,
  authFailed: 5,
  tooManyPerSecond: 6,
  flood: 9,
  internal: 10,
  rateLimit: 29,
  cannotSendWithoutPermission: 901,
  cannotSendPrivacy: 902,
} as const;

function kindOf(code: number): RefusalKind {
  if (code === VK_ERRORS.authFailed) return 'auth';
  if (code === VK_ERRORS.tooManyPerSecond || code === VK_ERRORS.flood || code === VK_ERRORS.rateLimit) return 'rate';
  return 'refused';
}

export class VkError extends ProviderRefusal {
  constructor(code: number, message: string) {
    super('VK', code, message, kindOf(code));
  }
}

export interface VkLongPollServer {
  server: string;
  key: string;
  ts: string;
}

export class VkApi {
  constructor(
    private readonly root: string,
    private readonly token: string,
    private readonly version: string,
    private readonly timeoutMs: number,
  ) {}

  async call<T>(method: string, params: FormParams = {}): Promise<T> {
    const answer = await postForm(
      `${this.root}/${method}`,
      { ...params, access_token: this.token, v: this.version },
      { timeoutMs: this.timeoutMs },
    );
    const body = jsonAnswer('VK', method, answer);
    if (isObject(body) && isObject(body.error)) {
      const code = Number(body.error.error_code);
      const message = String(body.error.error_msg ?? `VK error ${code}`);
      // Internal errors of VK are its failure (502), not a refusal of what Parley asked.
      if (code === VK_ERRORS.internal || code === VK_ERRORS.unknown) throw new ChannelFailedError(`VK ${method} failed: ${message}`);
      throw new VkError(code, message);
    }
    if (!isObject(body) || !('response' in body)) throw new ChannelFailedError(`VK ${method} answered no response`);
    return body.response as T;
  }

  /** Uploads a file to an upload server VK named (photos/docs): its JSON answer. */
  async upload(url: string, field: string, file: { bytes: Buffer; name: string; mime: string }): Promise<Record<string, unknown>> {
    const body = jsonAnswer('VK', 'upload', await uploadFile(url, field, file, this.timeoutMs));
    if (!isObject(body)) throw new ChannelFailedError('VK upload answered no object');
    if (typeof body.error === 'string' || isObject(body.error)) {
      throw new VkError(0, `upload refused: ${typeof body.error === 'string' ? body.error : JSON.stringify(body.error)}`);
    }
    return body;
  }

  /**
   * One Bots Long Poll request (https://dev.vk.com/en/api/bots-long-poll/getting-started):
   * `<server>?act=a_check&key=<key>&ts=<ts>&wait=<wait>`. Answers `{ts, updates}` or `{failed, ts?}`.
   */
  async check(
    session: VkLongPollServer,
    ts: string,
    wait: number,
    signal?: AbortSignal,
  ): Promise<{ ts?: string; updates?: unknown[]; failed?: number }> {
    const url = new URL(session.server);
    url.searchParams.set('act', 'a_check');
    url.searchParams.set('key', session.key);
    url.searchParams.set('ts', ts);
    url.searchParams.set('wait', String(wait));
    const answer = await request(url.toString(), { method: 'GET', timeoutMs: (wait + 10) * 1000, signal });
    const body = jsonAnswer('VK', 'a_check', answer);
    if (!isObject(body)) throw new ChannelFailedError('VK long poll answered no object');
    return {
      ...(body.ts !== undefined ? { ts: String(body.ts) } : {}),
      ...(Array.isArray(body.updates) ? { updates: body.updates } : {}),
      ...(typeof body.failed === 'number' ? { failed: body.failed } : {}),
    };
  }
}
