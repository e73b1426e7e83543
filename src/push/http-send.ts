import http from 'node:http';
import https from 'node:https';
import { guardedLookup } from '../net/address-guard.js';

export interface SendResult {
  status: number;
  body: string;
}

const TIMEOUT_MS = 10_000;
const MAX_BODY = 4096;

const guardedAgents = { http: new http.Agent({ lookup: guardedLookup }), https: new https.Agent({ lookup: guardedLookup }) };

/**
 * One POST to a push service. Web Push endpoints come from browsers, so unless private addresses
 * are allowed (development) the connection goes only to public addresses, checked at connect time
 * (the webhooks' guard). Answers are read up to 4 KiB; redirects are not followed.
 */
export function postTo(
  url: string,
  headers: Record<string, string | number>,
  body: Buffer | string,
  allowPrivate: boolean,
): Promise<SendResult> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  const agent = allowPrivate ? undefined : target.protocol === 'https:' ? guardedAgents.https : guardedAgents.http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      target,
      { method: 'POST', headers: { ...headers, 'content-length': Buffer.byteLength(body) }, agent, timeout: TIMEOUT_MS },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (text.length < MAX_BODY) text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text.slice(0, MAX_BODY) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('push service timed out')));
    req.on('error', reject);
    req.end(body);
  });
}
