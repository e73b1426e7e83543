import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from '../src/channels/bots/http.js';
import { ChannelFailedError, ChannelTimeoutError } from '../src/domain/channels/channel.js';
import { pause } from '../src/channels/social/long-poller.js';

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

describe('the Telegram poller pause', () => {
  it('ends after its time or at the abort, leaving no listener on the long-lived signal', async () => {
    vi.useFakeTimers();
    try {
      const running = new AbortController();
      for (let i = 0; i < 20; i++) {
        const waited = pause(5_000, running.signal);
        await vi.advanceTimersByTimeAsync(5_000);
        await waited;
      }
      expect(getEventListeners(running.signal, 'abort')).toHaveLength(0);
      const cut = pause(60_000, running.signal);
      running.abort();
      await cut;
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
