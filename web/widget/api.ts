/** The visitor protocol of the Parley server (/widget/v1), as the widget uses it. */

export type PreChatMode = 'optional' | 'required' | 'off';

export interface WidgetConfig {
  key: string;
  title: string;
  greeting: string;
  color: string;
  preChat: { name: PreChatMode; email: PreChatMode; phone: PreChatMode };
  offline: boolean;
  offlineMessage: string;
  identityVerification: boolean;
  language?: string;
  defaultTexts?: Array<'title' | 'greeting' | 'offlineMessage'>;
}

export interface Attachment {
  type: string;
  url: string;
  name: string;
  size: number | null;
}

export interface Message {
  id: string;
  from: 'visitor' | 'agent';
  text: string;
  attachments: Attachment[];
  at: number;
}

export interface Session {
  token: string;
  resumed: boolean;
  visitor: { id: string; name: string; email: string; phone: string; verified: boolean };
  widget: WidgetConfig;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter: number,
  ) {
    super(message);
  }
}

export class Api {
  token: string | undefined;

  constructor(readonly base: string) {}

  private async call<T>(method: string, path: string, body?: unknown, form?: FormData): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${this.base}/widget/v1${path}`, {
        method,
        headers,
        body: form ?? (body === undefined ? undefined : JSON.stringify(body)),
        credentials: 'omit',
        mode: 'cors',
      });
    } catch {
      throw new ApiError(0, 'network', 'Cannot reach the chat server', 0);
    }
    const data = (await res.json().catch(() => ({}))) as { error?: string; code?: string };
    if (!res.ok) {
      const retry = Number(res.headers.get('retry-after') || 0);
      throw new ApiError(res.status, data.code || 'error', data.error || 'Something went wrong', retry);
    }
    return data as T;
  }

  config(key: string): Promise<WidgetConfig> {
    return this.call('GET', `/widgets/${encodeURIComponent(key)}`);
  }

  session(body: Record<string, string | undefined>): Promise<Session> {
    return this.call('POST', '/sessions', body);
  }

  history(): Promise<{ messages: Message[]; cursor: number }> {
    return this.call('GET', '/messages');
  }

  send(clientId: string, text: string, fileId?: string): Promise<{ message: Message }> {
    return this.call('POST', '/messages', { clientId, text, ...(fileId ? { fileId } : {}) });
  }

  upload(file: File): Promise<{ file: { id: string; name: string; url: string; type: string; size: number } }> {
    const form = new FormData();
    form.append('file', file, file.name);
    return this.call('POST', '/uploads', undefined, form);
  }

  socketUrl(): string {
    return `${this.base.replace(/^http/, 'ws')}/widget/v1/socket?token=${encodeURIComponent(this.token || '')}`;
  }
}
