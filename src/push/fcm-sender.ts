import fs from 'node:fs';
import { importPKCS8, SignJWT } from 'jose';
import type { Clock } from '../domain/clock.js';
import type { PushOutcome } from './web-push-sender.js';
import { postTo } from './http-send.js';

/** The fields of a Firebase service-account key file that FCM HTTP v1 needs. */
export interface ServiceAccount {
  project_id: string;
  client_email: string;
  private_key: string;
  token_uri: string;
}

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

/** PARLEY_FCM_CREDENTIALS: the JSON itself, or the path of a file holding it. */
export function parseServiceAccount(raw: string): ServiceAccount {
  const text = raw.trimStart().startsWith('{') ? raw : fs.readFileSync(raw, 'utf8');
  const parsed = JSON.parse(text) as Partial<ServiceAccount>;
  for (const key of ['project_id', 'client_email', 'private_key', 'token_uri'] as const) {
    if (typeof parsed[key] !== 'string' || !parsed[key]) throw new Error(`PARLEY_FCM_CREDENTIALS lacks "${key}"`);
  }
  return parsed as ServiceAccount;
}

export interface FcmMessage {
  title: string;
  body: string;
  data: Record<string, string>;
}

/**
 * FCM HTTP v1: `POST <root>/v1/projects/<project>/messages:send` with an OAuth 2 bearer obtained
 * from the service account (a JWT signed with its key, exchanged at its `token_uri`, RFC 7523),
 * kept until a minute before it expires. UNREGISTERED (404) and 410 mean the token is gone.
 */
export class FcmSender {
  private bearer: { token: string; until: number } | undefined;

  constructor(
    private readonly account: ServiceAccount,
    private readonly apiRoot: string,
    private readonly clock: Clock,
  ) {}

  async send(token: string, message: FcmMessage): Promise<PushOutcome> {
    const body = JSON.stringify({
      message: {
        token,
        notification: { title: message.title, body: message.body },
        data: message.data,
        android: { priority: 'high', collapse_key: message.data.leadId },
        apns: { headers: { 'apns-priority': '10', 'apns-collapse-id': message.data.leadId ?? '' } },
      },
    });
    const url = `${this.apiRoot}/v1/projects/${encodeURIComponent(this.account.project_id)}/messages:send`;
    let res = await postTo(url, { authorization: `Bearer ${await this.accessToken()}`, 'content-type': 'application/json' }, body, true);
    if (res.status === 401) {
      // The bearer was revoked or expired early: one fresh try.
      this.bearer = undefined;
      res = await postTo(url, { authorization: `Bearer ${await this.accessToken()}`, 'content-type': 'application/json' }, body, true);
    }
    if (res.status === 404 || res.status === 410) return 'gone';
    return res.status >= 200 && res.status < 300 ? 'sent' : 'failed';
  }

  private async accessToken(): Promise<string> {
    const now = this.clock.now();
    if (this.bearer && this.bearer.until > now) return this.bearer.token;
    const iat = Math.floor(now / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(this.account.client_email)
      .setSubject(this.account.client_email)
      .setAudience(this.account.token_uri)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(await importPKCS8(this.account.private_key, 'RS256'));
    const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
    const res = await postTo(this.account.token_uri, { 'content-type': 'application/x-www-form-urlencoded' }, form, true);
    if (res.status !== 200) throw new Error(`FCM token exchange failed: ${res.status}`);
    const parsed = JSON.parse(res.body) as { access_token?: unknown; expires_in?: unknown };
    if (typeof parsed.access_token !== 'string') throw new Error('FCM token exchange answered no access_token');
    const ttl = typeof parsed.expires_in === 'number' ? parsed.expires_in : 3600;
    this.bearer = { token: parsed.access_token, until: now + Math.max(0, ttl - 60) * 1000 };
    return parsed.access_token;
  }
}
