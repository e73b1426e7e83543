import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import { fileRows, multipartBody, postForm, sample, storedBlobs } from './helpers/multipart.js';
import { checkDeclaredMime, detectMime, isForbiddenMime, mimeEssence } from '../src/domain/files/sniff.js';
import { fileRefOf, mediaObject } from '../src/domain/files/media.js';
import { cleanFilename } from '../src/domain/files/files.service.js';
import { parseRange } from '../src/api/routes/files.routes.js';
import { LocalDiskStorage } from '../src/storage/local-disk.js';
import { FileTooLargeError } from '../src/storage/storage.js';
import type { UploadShape } from '../src/domain/channels/integration-types.js';

let h: Harness;
let owner: SignedUp;
let widget: number;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  widget = await createIntegration(h, owner.accountId, 'widget');
});
afterAll(() => h.close());

/** Uploads through the API (v1.3, widget: `{mime, name, path}`) and answers the file's path. */
async function uploaded(data: Uint8Array | string, type: string, filename: string): Promise<string> {
  const res = await postForm(h, '/v1.3/messaging/upload', owner.access, [
    ['said', String(widget)],
    ['media', { data, type, filename }],
  ]);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().media.path;
}

const get = (url: string, headers: Record<string, string> = {}) => h.request({ method: 'GET', url, headers });

describe('GET /files/<id>/<name>', () => {
  it('round trip: the same bytes with type, length, inline disposition, nosniff, cache and ETag headers', async () => {
    const data = sample('png', 5000);
    const url = await uploaded(data, 'image/png', 'cat.png');
    const res = await get(url);
    expect(res.statusCode).toBe(200);
    expect(Buffer.compare(res.rawPayload, Buffer.from(data))).toBe(0);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['content-length']).toBe('5000');
    expect(res.headers['content-disposition']).toBe(`inline; filename="cat.png"; filename*=UTF-8''cat.png`);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain('sandbox');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const [row] = (await fileRows(h, owner.accountId)).filter((r) => url.includes(r.id));
    expect(res.headers.etag).toBe(`"${row!.md5}"`);
    expect(row!.md5).toBe(crypto.createHash('md5').update(data).digest('hex'));
    expect(res.headers['last-modified']).toBe(new Date(h.clock.now()).toUTCString());
  });

  it('documents download as attachment, with an RFC 5987 filename* for any name', async () => {
    // Stored directly: a browser's FormData would send the quotes as %22.
    const name = 'Счёт №5 "final" (v2)\'s*.pdf';
    const file = await h.services.files.store(owner.accountId, Readable.from([Buffer.from(sample('pdf'))]), {
      filename: name,
      mime: 'application/pdf',
    });
    const url = file.url;
    expect(url).toContain(encodeURIComponent(name));
    const res = await get(url);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    const disposition = String(res.headers['content-disposition']);
    expect(disposition.startsWith('attachment; filename="')).toBe(true);
    expect(disposition).toMatch(/^[\x20-\x7e]+$/);
    const star = /filename\*=UTF-8''([^;]+)$/.exec(disposition)![1]!;
    expect(star).toMatch(/^[A-Za-z0-9%._~-]+$/);
    expect(decodeURIComponent(star)).toBe(name);
  });

  it('finds the file by id whatever the name segment says, and needs no token', async () => {
    const url = await uploaded('hello', 'text/plain', 'a.txt');
    const res = await get(url.replace(/[^/]+$/, 'other-name.bin'));
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('hello');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="a.txt"/);
  });

  it('unknown or malformed id -> 404 JSON', async () => {
    for (const url of ['/files/AAAAAAAAAAAAAAAAAAAAAA/x.png', '/files/not-an-id/x.png', '/files/..%2F..%2Fetc/passwd']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json()).toMatchObject({ code: 'not_found' });
    }
  });

  it('serves one byte range (206), suffix ranges, and 416 past the end', async () => {
    const data = Buffer.from('0123456789abcdef');
    const url = await uploaded(data, 'text/plain', 'digits.txt');
    const part = await get(url, { range: 'bytes=2-5' });
    expect(part.statusCode).toBe(206);
    expect(part.body).toBe('2345');
    expect(part.headers['content-range']).toBe('bytes 2-5/16');
    expect(part.headers['content-length']).toBe('4');

    const suffix = await get(url, { range: 'bytes=-3' });
    expect(suffix.statusCode).toBe(206);
    expect(suffix.body).toBe('def');

    const open = await get(url, { range: 'bytes=10-' });
    expect(open.body).toBe('abcdef');

    const past = await get(url, { range: 'bytes=99-' });
    expect(past.statusCode).toBe(416);
    expect(past.headers['content-range']).toBe('bytes */16');

    const several = await get(url, { range: 'bytes=0-1,4-5' });
    expect(several.statusCode).toBe(200);
    expect(several.body).toBe(data.toString());

    const stale = await get(url, { range: 'bytes=0-1', 'if-range': '"other"' });
    expect(stale.statusCode).toBe(200);
  });

  it('answers 304 to If-None-Match with its ETag, and HEAD with headers only', async () => {
    const url = await uploaded('cache me', 'text/plain', 'c.txt');
    const first = await get(url);
    const again = await get(url, { 'if-none-match': String(first.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');

    const head = await h.request({ method: 'HEAD', url });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe('8');
    expect(head.headers['content-type']).toBe('text/plain');
    expect(head.body).toBe('');
  });

  it('404 when the row exists but its bytes are gone', async () => {
    const url = await uploaded('soon gone', 'text/plain', 'g.txt');
    const [row] = (await fileRows(h, owner.accountId)).filter((r) => url.includes(r.id));
    for (const blob of storedBlobs(h)) if (blob.endsWith(row!.storage_key)) fs.rmSync(blob);
    expect((await get(url)).statusCode).toBe(404);
  });

  it('is in the OpenAPI document with its params, description and a binary 200', async () => {
    const doc = (await get('/docs/openapi.json')).json();
    const op = doc.paths['/files/{id}/{name}']?.get;
    expect(op).toBeDefined();
    expect(op.description).toMatch(/Content-Disposition/);
    expect(op.security).toEqual([]);
    expect(op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(['path:id', 'path:name']);
    expect(op.responses['200'].content['*/*'].schema).toMatchObject({ type: 'string', format: 'binary' });

    const upload = doc.paths['/v1.3/messaging/upload']?.post;
    const form = upload.requestBody.content['multipart/form-data'].schema;
    expect(Object.keys(form.properties).sort()).toEqual(['media', 'saId', 'said', 'source']);
    expect(form.properties.media).toMatchObject({ type: 'string', format: 'binary' });
  });
});

describe('file URLs', () => {
  it('use PARLEY_PUBLIC_URL when configured, in the stored file and in the upload answer', async () => {
    const other = await createHarness({ env: { PARLEY_PUBLIC_URL: 'https://inbox.example.com/' } });
    try {
      const o = await other.signUp();
      const integrationId = await createIntegration(other, o.accountId, 'msgra');
      const res = await postForm(other, '/v1.3/messaging/upload', o.access, [
        ['said', String(integrationId)],
        ['media', { data: 'x', type: 'text/plain', filename: 'a b.txt' }],
      ]);
      expect(res.statusCode, res.body).toBe(200);
      const { src } = res.json().media;
      expect(src).toMatch(/^https:\/\/inbox\.example\.com\/files\/[A-Za-z0-9_-]{22}\/a%20b\.txt$/);
      const file = await other.services.files.resolveMedia(o.accountId, res.json().media);
      expect(file!.url).toBe(src);
    } finally {
      await other.close();
    }
  });

  it('without it: a path in the stored file; the answer adds the request origin', async () => {
    const integrationId = await createIntegration(h, owner.accountId, 'msgra');
    const { body, contentType } = await multipartBody([
      ['said', String(integrationId)],
      ['media', { data: 'x', type: 'text/plain', filename: 'n.txt' }],
    ]);
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/upload',
      token: owner.access,
      headers: { host: 'files.example.org:8443', 'content-type': contentType },
      body,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().media.src).toMatch(/^http:\/\/files\.example\.org:8443\/files\/[A-Za-z0-9_-]{22}\/n\.txt$/);
    const file = await h.services.files.resolveMedia(owner.accountId, res.json().media);
    expect(file!.url).toMatch(/^\/files\//);
  });

  it('keep the name segment within the router limit, whatever the name length', async () => {
    const name = `${'я'.repeat(240)}.pdf`;
    const url = await uploaded(sample('pdf'), 'application/pdf', name);
    expect(decodeURIComponent(url.split('/')[3]!).length).toBeLessThanOrEqual(100);
    expect(decodeURIComponent(url.split('/')[3]!)).toMatch(/я\.pdf$/);
    const res = await get(url);
    expect(res.statusCode).toBe(200);
    expect(decodeURIComponent(/filename\*=UTF-8''(.+)$/.exec(String(res.headers['content-disposition']))![1]!)).toBe(name);
  });
});

describe('FilesService', () => {
  const SHAPES: UploadShape[] = ['id-url', 'type-filename-src', 'parts', 'mime-name-url', 'mime-name-path'];

  it('resolveMedia: every shape, absolute or not, and the v1.1 nesting, back to the file', async () => {
    const file = await h.services.files.store(owner.accountId, Readable.from([Buffer.from('resolve me')]), {
      filename: 'r.txt',
      mime: 'text/plain',
    });
    for (const shape of SHAPES) {
      for (const url of [file.url, `https://elsewhere.example${file.url}`]) {
        const media = mediaObject(file, shape, url);
        expect((await h.services.files.resolveMedia(owner.accountId, media))?.id, shape).toBe(file.id);
        const nested = { type: 'doc', media: { type: 'doc', media } };
        expect((await h.services.files.resolveMedia(owner.accountId, nested.media))?.id, shape).toBe(file.id);
      }
    }
    // The integer alias as a numeric string, as form-minded clients send it.
    expect((await h.services.files.resolveMedia(owner.accountId, { id: String(file.num) }))?.id).toBe(file.id);
  });

  it("resolveMedia: undefined for another account's file and for garbage", async () => {
    const file = await h.services.files.store(owner.accountId, Readable.from([Buffer.from('mine')]), {
      filename: 'm.txt',
      mime: 'text/plain',
    });
    const stranger = await h.signUp();
    for (const shape of SHAPES) {
      expect(await h.services.files.resolveMedia(stranger.accountId, mediaObject(file, shape, file.url))).toBeUndefined();
    }
    for (const garbage of [
      null,
      undefined,
      42,
      'str',
      [],
      {},
      { id: -1 },
      { id: 1.5 },
      { url: '/files/short/x' },
      { fileId: 7 },
      { media: { media: { fileId: file.id } } },
    ]) {
      expect(await h.services.files.resolveMedia(owner.accountId, garbage)).toBeUndefined();
    }
  });

  it('resolveMedia never throws and finds nothing for an account without files (property)', async () => {
    const empty = await h.signUp();
    await fc.assert(
      fc.asyncProperty(fc.anything({ withObjectString: true, withNullPrototype: true }), async (media) => {
        expect(await h.services.files.resolveMedia(empty.accountId, media)).toBeUndefined();
      }),
      { numRuns: 200 },
    );
  });

  it('attachmentOf gives the History message attachment', async () => {
    const file = await h.services.files.store(owner.accountId, Readable.from([Buffer.from(sample('png'))]), {
      filename: 'p.png',
      mime: 'image/png',
    });
    expect(h.services.files.attachmentOf(file, 'photo')).toEqual({ type: 'photo', url: file.url, text: 'p.png', filesize: 200 });
  });

  it('store keeps the size limit and its check of the bytes, leaving nothing behind', async () => {
    const small = await createHarness({ env: { PARLEY_UPLOAD_LIMIT: '10' } });
    try {
      const o = await small.signUp();
      await expect(
        small.services.files.store(o.accountId, Readable.from([Buffer.alloc(11, 0x61)]), { mime: 'text/plain' }),
      ).rejects.toMatchObject({
        statusCode: 413,
      });
      await expect(
        small.services.files.store(o.accountId, Readable.from([Buffer.from('not a png')]), { mime: 'image/png' }),
      ).rejects.toMatchObject({
        statusCode: 400,
      });
      expect(await fileRows(small)).toEqual([]);
      expect(storedBlobs(small)).toEqual([]);
      const ok = await small.services.files.store(o.accountId, Readable.from([Buffer.alloc(10, 0x61)]), { mime: 'text/plain' });
      expect(ok).toMatchObject({ size: 10, name: 'file.txt', mime: 'text/plain', accountId: o.accountId });
    } finally {
      await small.close();
    }
  });
});

describe('LocalDiskStorage', () => {
  const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'parley-storage-'));

  it('stores whole files only: a failing or oversized source leaves no file, temporary or not', async () => {
    const root = dir();
    try {
      const storage = new LocalDiskStorage(root);
      for (let i = 0; i < 30; i++) {
        await expect(
          storage.put(Readable.from([Buffer.alloc(100)]), { name: 'x', mime: 'text/plain', maxBytes: 50 }),
        ).rejects.toBeInstanceOf(FileTooLargeError);
        const failing = (async function* () {
          yield Buffer.from('partial');
          throw new Error('client went away');
        })();
        await expect(storage.put(failing, { name: 'x', mime: 'text/plain' })).rejects.toThrow('client went away');
      }
      const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((p) => fs.statSync(path.join(root, p)).isFile());
      expect(files).toEqual([]);

      const put = await storage.put(Readable.from([Buffer.from('abc'), Buffer.from('def')]), { name: 'x', mime: 'text/plain' });
      expect(put).toMatchObject({ size: 6, md5: 'e80b5017098950fc58aad83c8c14978e' });
      const chunks: Buffer[] = [];
      for await (const c of (await storage.open(put.key, { start: 1, end: 3 }))!) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe('bcd');
      await storage.delete(put.key);
      expect(await storage.open(put.key)).toBeUndefined();
      expect(await storage.open('../../etc/passwd')).toBeUndefined();
      await storage.delete('../../etc/passwd');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('the sniffer', () => {
  const bytes = (...parts: Array<string | number[]>) =>
    Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? Array.from(p, (c) => c.charCodeAt(0)) : p)));

  it('recognizes the formats of its table', () => {
    const cases: Array<[Uint8Array, string]> = [
      [bytes([0x89], 'PNG\r\n\x1a\n'), 'image/png'],
      [bytes([0xff, 0xd8, 0xff, 0xdb]), 'image/jpeg'],
      [bytes('GIF89a'), 'image/gif'],
      [bytes('RIFF', [0, 0, 0, 0], 'WEBPVP8 '), 'image/webp'],
      [bytes('BM', new Array(20).fill(0)), 'image/bmp'],
      [bytes('%PDF-1.4'), 'application/pdf'],
      [bytes('PK', [3, 4]), 'application/zip'],
      [bytes([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), 'application/msword'],
      [bytes([0, 0, 0, 0x18], 'ftypisom'), 'video/mp4'],
      [bytes([0, 0, 0, 0x14], 'ftypqt  '), 'video/quicktime'],
      [bytes([0x1a, 0x45, 0xdf, 0xa3]), 'video/webm'],
      [bytes('OggS'), 'audio/ogg'],
      [bytes('ID3', [3, 0]), 'audio/mpeg'],
      [bytes([0xff, 0xfb, 0x90]), 'audio/mpeg'],
      [bytes('RIFF', [0, 0, 0, 0], 'WAVEfmt '), 'audio/wav'],
      [bytes('RIFF', [0, 0, 0, 0], 'AVI LIST'), 'video/x-msvideo'],
      [bytes('fLaC'), 'audio/flac'],
    ];
    for (const [head, mime] of cases) expect(detectMime(head), mime).toBe(mime);
    expect(detectMime(bytes('plain words'))).toBeUndefined();
  });

  it('checks declared types against the bytes; takes unknown types as declared; refines generic ones', () => {
    const docx = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
    expect(checkDeclaredMime(docx, bytes('PK', [3, 4]))).toEqual({ ok: true, mime: docx });
    expect(checkDeclaredMime(docx, bytes('%PDF-'))).toEqual({ ok: false, reason: 'mismatch' });
    expect(checkDeclaredMime('audio/mpeg', bytes('ID3'))).toEqual({ ok: true, mime: 'audio/mpeg' });
    expect(checkDeclaredMime('text/csv', bytes([0x89], 'PNG'))).toEqual({ ok: true, mime: 'text/csv' });
    expect(checkDeclaredMime('application/octet-stream', bytes('%PDF-1.7'))).toEqual({ ok: true, mime: 'application/pdf' });
    expect(checkDeclaredMime('application/octet-stream', bytes('zzz'))).toEqual({ ok: true, mime: 'application/octet-stream' });
  });

  it('parses and refuses types', () => {
    expect(mimeEssence('Image/PNG; charset=x')).toBe('image/png');
    expect(mimeEssence('nonsense')).toBeUndefined();
    expect(mimeEssence('')).toBeUndefined();
    for (const t of [
      'text/html',
      'image/svg+xml',
      'text/javascript',
      'application/x-javascript',
      'multipart/related',
      'application/x-msdownload',
    ]) {
      expect(isForbiddenMime(t), t).toBe(true);
    }
    for (const t of ['image/png', 'text/plain', 'application/pdf', 'application/json']) expect(isForbiddenMime(t), t).toBe(false);
  });

  it('never throws on arbitrary bytes and types (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.string({ maxLength: 60 }), (head, declared) => {
        const detected = detectMime(head);
        expect(detected === undefined || typeof detected === 'string').toBe(true);
        const essence = mimeEssence(declared);
        if (essence) {
          const verdict = checkDeclaredMime(essence, head);
          expect(typeof verdict.ok).toBe('boolean');
          isForbiddenMime(essence);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('helpers', () => {
  it('cleanFilename drops directories, control and bidi characters, and keeps the extension when shortening', () => {
    expect(cleanFilename('a/b\\c.txt', 'text/plain')).toBe('a_b_c.txt');
    expect(cleanFilename(' \u0000\u202Etxt.exe ', 'text/plain')).toBe('txt.exe');
    expect(cleanFilename(undefined, 'image/png')).toBe('file.png');
    expect(cleanFilename('..', 'application/x-unknown')).toBe('file');
    const long = cleanFilename(`${'x'.repeat(400)}.jpeg`, 'image/jpeg');
    expect(Array.from(long).length).toBe(255);
    expect(long.endsWith('.jpeg')).toBe(true);
  });

  it('parseRange', () => {
    expect(parseRange(undefined, 10)).toBeUndefined();
    expect(parseRange('bytes=0-0', 10)).toEqual({ start: 0, end: 0 });
    expect(parseRange('bytes=5-100', 10)).toEqual({ start: 5, end: 9 });
    expect(parseRange('bytes=-100', 10)).toEqual({ start: 0, end: 9 });
    expect(parseRange('bytes=-0', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=5-2', 10)).toBeUndefined();
    expect(parseRange('items=0-1', 10)).toBeUndefined();
  });

  it('fileRefOf reads each shape', () => {
    const id = 'abcdefghijklmnopqrstuv';
    expect(fileRefOf({ fileId: id })).toEqual({ id });
    expect(fileRefOf({ src: `https://x/files/${id}/a.png?x=1` })).toEqual({ id });
    expect(fileRefOf({ path: `/files/${id}/a.png` })).toEqual({ id });
    expect(fileRefOf({ id: 77, url: 'https://provider.example/photo77' })).toEqual({ num: 77 });
    expect(fileRefOf({ type: 'photo', media: { fileId: id } })).toEqual({ id });
  });
});
