import { afterAll, describe, expect, it, vi } from 'vitest';
import { AttachmentError, fetchAttachment } from '../src/domain/migration/attachment-fetcher.js';
import { SourceClient } from '../src/domain/migration/source-client.js';
import type { FilesService } from '../src/domain/files/files.service.js';
import { serve } from './helpers/migration-source.js';

// The pacing of `parley migrate`'s client (docs/migrate.md "A good client of someone else's
// server"): turns `1000 / rate` ms apart, and a 429's pause kept by every request, those already
// waiting for their turn included. Waits are handed to the test, which ends each one: no time passes.
const servers: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

/** A sleep the test ends: each call is recorded with its length and waits for `release`. */
function heldSleeps() {
  const held: Array<{ ms: number; release: () => void }> = [];
  return {
    held,
    sleep: (ms: number) => new Promise<void>((resolve) => held.push({ ms, release: resolve })),
  };
}

describe('the source client', () => {
  it("spaces requests to the rate; a request waiting for its turn when a 429 comes waits out the 429's pause too", async () => {
    const seen: string[] = [];
    const source = await serve((req, res) => {
      seen.push(req.url ?? '');
      const limited = seen.length === 1;
      res.writeHead(limited ? 429 : 200, { 'content-type': 'application/json', ...(limited ? { 'retry-after': '5' } : {}) });
      res.end('{}');
    });
    servers.push(source);
    const { held, sleep } = heldSleeps();
    const client = new SourceClient({
      base: source.url,
      token: 't',
      rate: 1,
      concurrency: 2,
      timeoutMs: 5000,
      retries: 2,
      maxBody: 1024,
      sleep,
    });
    const first = client.request('GET', '/a');
    const second = client.request('GET', '/b');
    // /a goes at once and meets the 429; /b waits for its turn, a second later.
    await vi.waitFor(() => expect(held).toHaveLength(2));
    expect(seen).toEqual(['/a']);
    expect(held[0]!.ms).toBeGreaterThan(900);
    expect(held[0]!.ms).toBeLessThanOrEqual(1000);
    expect(held[1]!.ms).toBe(5000);
    // /b's turn comes within the pause: it waits for the pause to end instead of meeting a 429.
    held[0]!.release();
    await vi.waitFor(() => expect(held).toHaveLength(3));
    expect(seen).toEqual(['/a']);
    expect(held[2]!.ms).toBeGreaterThan(3900);
    held[2]!.release();
    await vi.waitFor(() => expect(seen).toEqual(['/a', '/b']));
    expect((await second).status).toBe(200);
    // /a again after its own wait, in the turn after /b's.
    held[1]!.release();
    await vi.waitFor(() => expect(held).toHaveLength(4));
    expect(held[3]!.ms).toBeGreaterThan(4000);
    held[3]!.release();
    expect((await first).status).toBe(200);
    expect(seen).toEqual(['/a', '/b', '/a']);
    expect(client.stats).toMatchObject({ rateLimited: 1, requests: 3 });
  });
});

describe('attachment downloads', () => {
  it('a host whose name did not resolve earlier in the run is not asked again: its other files fail at once', async () => {
    let asked = 0;
    const cdn = await serve((_req, res) => {
      asked++;
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end('png');
    });
    servers.push(cdn);
    const source = {
      origin: 'https://inbox.example.com',
      token: () => 't',
      allowPrivate: true,
      timeoutMs: 5000,
      unresolved: new Set(['127.0.0.1']),
    };
    // The file storage is never reached: nothing is downloaded.
    const files = {} as FilesService;
    await expect(fetchAttachment(files, 1, source, `${cdn.url}/photo.png`, undefined)).rejects.toThrow(
      new AttachmentError('host 127.0.0.1 not found'),
    );
    expect(asked).toBe(0);
  });
});
