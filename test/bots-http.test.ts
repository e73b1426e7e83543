import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../src/channels/bots/http.js';
import { ChannelFailedError, ChannelTimeoutError } from '../src/channels/channel.js';

let server: http.Server;
let base: string;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/silent') return; // never answers
    res.end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('bot provider HTTP', () => {
  it('answers with the status and body of the provider', async () => {
    const answer = await request(`${base}/ok`, { timeoutMs: 5_000 });
    expect(answer).toMatchObject({ status: 200, text: '{"ok":true}' });
  });

  it('turns a missed deadline into ChannelTimeoutError', async () => {
    await expect(request(`${base}/silent`, { timeoutMs: 50 })).rejects.toBeInstanceOf(ChannelTimeoutError);
  });

  it('stops when the caller aborts, before or during the request', async () => {
    const before = new AbortController();
    before.abort();
    await expect(request(`${base}/ok`, { timeoutMs: 5_000, signal: before.signal })).rejects.toThrow(ChannelFailedError);
    const during = new AbortController();
    const pending = request(`${base}/silent`, { timeoutMs: 5_000, signal: during.signal });
    during.abort();
    await expect(pending).rejects.toThrow('request aborted');
  });
});
