import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { fileRows, multipartBody, postForm, sample, storedBlobs } from './helpers/multipart.js';

const LIMIT = 4096;

let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let widget: number;

beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_UPLOAD_LIMIT: String(LIMIT) } });
  owner = await h.signUp();
  other = await h.signUp();
  widget = await createIntegration(h, owner.accountId, 'widget');
});
afterAll(() => h.close());

const upload = (version: string, entries: Parameters<typeof postForm>[3], token = owner.access) =>
  postForm(h, `/v1.${version}/messaging/upload`, token, entries);

const pngFile = (filename = 'photo.png') => ({ data: sample('png'), type: 'image/png', filename });

/** Runs `act` and checks that it stored nothing: no row (any account) and no bytes on disk. */
async function expectNothingStored<R extends { statusCode: number; body: string }>(act: () => Promise<R>, status: number): Promise<R> {
  const rowsBefore = (await fileRows(h)).length;
  const blobsBefore = storedBlobs(h).length;
  const res = await act();
  expect(res.statusCode, res.body).toBe(status);
  expect((await fileRows(h)).length).toBe(rowsBefore);
  expect(storedBlobs(h).length).toBe(blobsBefore);
  return res;
}

describe('POST /messaging/upload: the answer', () => {
  it('stores the file and answers {type: photo, media} in the shape of the integration type (v1.3)', async () => {
    const res = await upload('3', [
      ['said', String(widget)],
      ['media', pngFile()],
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.type).toBe('photo');
    expect(Object.keys(body.media).sort()).toEqual(['mime', 'name', 'path']);
    expect(body.media.mime).toBe('image/png');
    expect(body.media.name).toBe('photo.png');
    expect(body.media.path).toMatch(/^\/files\/[A-Za-z0-9_-]{22}\/photo\.png$/);

    const id = body.media.path.split('/')[2];
    const [row] = (await fileRows(h, owner.accountId)).filter((r) => r.id === id);
    expect(row).toMatchObject({ name: 'photo.png', mime: 'image/png', size: 200 });
    expect(storedBlobs(h).some((p) => p.endsWith(row!.storage_key))).toBe(true);
  });

  const SHAPES: Array<[type: string, keys: string[]]> = [
    ['social2_group', ['id', 'url']],
    ['social2_personal', ['id', 'url']],
    ['msgra', ['filename', 'src', 'type']],
    ['msgra2', ['filename', 'src', 'type']],
    ['msgrb_personal', ['fileId', 'filename', 'md5', 'mime', 'parts']],
    ['photonetV2', ['mime', 'name', 'size', 'type', 'url']],
    ['msgrc_bot', ['mime', 'name', 'size', 'type', 'url']],
    ['social3', ['mime', 'name', 'size', 'type', 'url']],
    ['msgrb_bot', ['mime', 'name', 'path']],
    ['social1_messenger', ['mime', 'name', 'path']],
  ];

  for (const [type, keys] of SHAPES) {
    it(`answers the ${type} shape (${keys.join(', ')}), and resolveMedia finds the file from it`, async () => {
      const integrationId = await createIntegration(h, owner.accountId, type);
      const lead = await createLead(h, owner.accountId, integrationId);
      // Half through `said`, half through `source` (the channel's realId).
      const target: [string, string] = type.length % 2 ? ['said', String(integrationId)] : ['source', String(lead.sourceId)];
      const data = sample('pdf', 321);
      const res = await upload('3', [target, ['media', { data, type: 'application/pdf', filename: 'price list.pdf' }]]);
      expect(res.statusCode, res.body).toBe(200);
      const { type: kind, media } = res.json();
      expect(kind).toBe('doc');
      expect(Object.keys(media).sort()).toEqual(keys);

      const file = await h.services.files.resolveMedia(owner.accountId, media);
      expect(file).toBeDefined();
      expect(file).toMatchObject({ accountId: owner.accountId, name: 'price list.pdf', mime: 'application/pdf', size: 321 });
      // No PARLEY_PUBLIC_URL here: the answer makes the URL absolute with the request's origin (inject: localhost:80).
      const url = `http://localhost:80${file!.url}`;
      if (keys.includes('id')) expect(media).toEqual({ id: file!.num, url });
      if (keys.includes('src')) expect(media).toEqual({ type: 'application/pdf', filename: 'price list.pdf', src: url });
      if (keys.includes('parts')) {
        expect(media).toEqual({ parts: 1, fileId: file!.id, mime: 'application/pdf', filename: 'price list.pdf', md5: file!.md5 });
        expect(file!.md5).toMatch(/^[0-9a-f]{32}$/);
      }
      if (keys.includes('size')) expect(media).toEqual({ mime: 'application/pdf', name: 'price list.pdf', url, type: 'doc', size: '321' });
      if (keys.includes('path')) expect(media).toEqual({ mime: 'application/pdf', name: 'price list.pdf', path: file!.url });
      expect(file!.url).toBe(`/files/${file!.id}/price%20list.pdf`);
    });
  }

  it('v1.1 nests the media object twice; v1.2 does not', async () => {
    const v11 = await upload('1', [
      ['said', String(widget)],
      ['media', pngFile()],
    ]);
    expect(v11.statusCode, v11.body).toBe(200);
    const nested = v11.json();
    expect(Object.keys(nested).sort()).toEqual(['media', 'type']);
    expect(nested.type).toBe('photo');
    expect(nested.media.type).toBe('photo');
    expect(Object.keys(nested.media.media).sort()).toEqual(['mime', 'name', 'path']);
    // The nested answer as a whole also names the file.
    expect(await h.services.files.resolveMedia(owner.accountId, nested.media)).toBeDefined();

    const v12 = await upload('2', [
      ['said', String(widget)],
      ['media', pngFile()],
    ]);
    expect(v12.statusCode, v12.body).toBe(200);
    expect(Object.keys(v12.json().media).sort()).toEqual(['mime', 'name', 'path']);
  });

  it('takes the fields in any order, `saId` for `said`, and the channel by its own id string', async () => {
    const lead = await createLead(h, owner.accountId, widget);
    const channel = await h.database.db.kysely
      .selectFrom('sources')
      .select('external_id')
      .where('id', '=', lead.sourceId)
      .executeTakeFirstOrThrow();
    for (const entries of [
      [
        ['media', pngFile()],
        ['saId', String(widget)],
      ],
      [
        ['media', pngFile()],
        ['source', channel.external_id],
      ],
      [
        ['source', String(lead.sourceId)],
        ['media', pngFile()],
        ['note', 'ignored extra field'],
      ],
    ] as Parameters<typeof postForm>[3][]) {
      const res = await upload('3', entries);
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('takes the type from the bytes when the part declares a generic one', async () => {
    const res = await upload('3', [
      ['said', String(widget)],
      ['media', { data: sample('png'), type: 'application/octet-stream', filename: 'x.bin' }],
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ type: 'photo', media: { mime: 'image/png' } });

    const text = await upload('3', [
      ['said', String(widget)],
      ['media', { data: 'just words\n', type: 'text/plain', filename: 'notes.txt' }],
    ]);
    expect(text.statusCode, text.body).toBe(200);
    expect(text.json()).toMatchObject({ type: 'doc', media: { mime: 'text/plain', name: 'notes.txt' } });
  });

  it('cleans the file name and names a nameless file', async () => {
    const res = await upload('3', [
      ['said', String(widget)],
      ['media', { data: 'a', type: 'text/plain', filename: 'evil\u202Egnp.exe\u0007' }],
    ]);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().media.name).toBe('evilgnp.exe');
  });

  it('keeps working for an expired account (upload is not a send)', async () => {
    const expired = await h.signUp();
    const integrationId = await createIntegration(h, expired.accountId, 'widget');
    await h.services.accounts.setPlan(expired.accountId, { expiration: h.clock.now() - 1000 });
    expect(await h.services.accounts.status(expired.accountId)).toBe('expired');
    const res = await upload(
      '3',
      [
        ['said', String(integrationId)],
        ['media', pngFile()],
      ],
      expired.access,
    );
    expect(res.statusCode, res.body).toBe(200);
  });
});

describe('POST /messaging/upload: refusals store nothing', () => {
  it('both source and said -> 400, whichever comes first', async () => {
    const lead = await createLead(h, owner.accountId, widget);
    for (const entries of [
      [
        ['source', String(lead.sourceId)],
        ['said', String(widget)],
        ['media', pngFile()],
      ],
      [
        ['media', pngFile()],
        ['source', String(lead.sourceId)],
        ['said', String(widget)],
      ],
    ] as Parameters<typeof postForm>[3][]) {
      const res = await expectNothingStored(() => upload('3', entries), 400);
      expect(res.json()).toMatchObject({ code: 'validation_failed' });
      expect(res.json().error).toMatch(/exactly one of source or said/);
      // The rest of the body may be unread: the connection is not reused.
      expect(res.headers.connection).toBe('close');
    }
  });

  it('neither source nor said -> 400 (v1.1 in its own error format)', async () => {
    const res = await expectNothingStored(() => upload('3', [['media', pngFile()]]), 400);
    expect(res.json()).toMatchObject({ code: 'validation_failed', error: 'Give exactly one of source or said' });
    const legacy = await expectNothingStored(() => upload('1', [['media', pngFile()]]), 400);
    expect(legacy.json()).toEqual({ statusCode: 400, message: 'Give exactly one of source or said' });
  });

  it('said that is not an integer, or said and saId that differ -> 400', async () => {
    await expectNothingStored(
      () =>
        upload('3', [
          ['said', 'abc'],
          ['media', pngFile()],
        ]),
      400,
    );
    await expectNothingStored(
      () =>
        upload('3', [
          ['said', String(widget)],
          ['saId', String(widget + 1)],
          ['media', pngFile()],
        ]),
      400,
    );
  });

  it('a file larger than PARLEY_UPLOAD_LIMIT -> 413, the partial file removed; exactly the limit is fine', async () => {
    for (const order of ['said first', 'media first']) {
      const big = { data: new Uint8Array(LIMIT + 1).fill(0x61), type: 'text/plain', filename: 'big.txt' };
      const entries: Parameters<typeof postForm>[3] =
        order === 'said first'
          ? [
              ['said', String(widget)],
              ['media', big],
            ]
          : [
              ['media', big],
              ['said', String(widget)],
            ];
      const res = await expectNothingStored(() => upload('3', entries), 413);
      expect(res.json()).toMatchObject({ code: 'payload_too_large' });
    }
    const huge = await expectNothingStored(
      () =>
        upload('2', [
          ['said', String(widget)],
          ['media', { data: new Uint8Array(LIMIT * 20), type: 'text/plain', filename: 'huge.txt' }],
        ]),
      413,
    );
    expect(huge.json().code).toBe('payload_too_large');

    const exact = await upload('3', [
      ['said', String(widget)],
      ['media', { data: new Uint8Array(LIMIT).fill(0x62), type: 'text/plain', filename: 'ok.txt' }],
    ]);
    expect(exact.statusCode, exact.body).toBe(200);
  });

  it('content that does not match its Content-Type -> 400', async () => {
    const cases = [
      { data: sample('png'), type: 'application/pdf' },
      { data: sample('text'), type: 'image/png' },
      { data: sample('pdf'), type: 'image/jpeg' },
      { data: sample('jpeg'), type: 'video/mp4' },
    ];
    for (const file of cases) {
      const res = await expectNothingStored(
        () =>
          upload('3', [
            ['said', String(widget)],
            ['media', { ...file, filename: 'x' }],
          ]),
        400,
      );
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().details[0].message).toMatch(/content does not match its Content-Type/);
    }
  });

  it('types that could run as script when served -> 415', async () => {
    for (const type of ['text/html', 'image/svg+xml', 'application/javascript', 'application/x-msdownload', 'text/html; charset=utf-8']) {
      const res = await expectNothingStored(
        () =>
          upload('3', [
            ['said', String(widget)],
            ['media', { data: '<script>alert(1)</script>', type, filename: 'x.html' }],
          ]),
        415,
      );
      expect(res.json().code).toBe('unsupported_media_type');
    }
  });

  it('an empty file -> 400', async () => {
    await expectNothingStored(
      () =>
        upload('3', [
          ['said', String(widget)],
          ['media', { data: '', type: 'text/plain', filename: 'empty.txt' }],
        ]),
      400,
    );
  });

  it("another account's source or integration -> 404", async () => {
    const foreign = await createIntegration(h, other.accountId, 'widget');
    const foreignLead = await createLead(h, other.accountId, foreign);
    for (const target of [
      ['said', String(foreign)],
      ['source', String(foreignLead.sourceId)],
      ['said', '999999'],
      ['source', 'no-such-chat'],
    ] as [string, string][]) {
      const res = await expectNothingStored(() => upload('3', [target, ['media', pngFile()]]), 404);
      expect(res.json().code).toBe('not_found');
    }
  });

  it('a deleted integration, or one outside a manager\u2019s sources -> 404', async () => {
    const deleted = await createIntegration(h, owner.accountId, 'widget');
    await h.database.db.kysely.updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', deleted).execute();
    await expectNothingStored(
      () =>
        upload('3', [
          ['said', String(deleted)],
          ['media', pngFile()],
        ]),
      404,
    );

    const reachable = await createIntegration(h, owner.accountId, 'widget');
    const manager = await createManager(h, owner, { sources: [reachable] });
    const lead = await createLead(h, owner.accountId, widget);
    await expectNothingStored(
      () =>
        upload(
          '3',
          [
            ['said', String(widget)],
            ['media', pngFile()],
          ],
          manager.access,
        ),
      404,
    );
    await expectNothingStored(
      () =>
        upload(
          '3',
          [
            ['source', String(lead.sourceId)],
            ['media', pngFile()],
          ],
          manager.access,
        ),
      404,
    );
    const ok = await upload(
      '3',
      [
        ['said', String(reachable)],
        ['media', pngFile()],
      ],
      manager.access,
    );
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('no media part, a file in another field, or two files -> 400/413', async () => {
    const missing = await expectNothingStored(() => upload('3', [['said', String(widget)]]), 400);
    expect(missing.json().details).toEqual([{ path: 'body.media', message: 'is required' }]);
    await expectNothingStored(
      () =>
        upload('3', [
          ['said', String(widget)],
          ['photo', pngFile()],
        ]),
      400,
    );
    const two = await expectNothingStored(
      () =>
        upload('3', [
          ['said', String(widget)],
          ['media', pngFile()],
          ['media', pngFile('b.png')],
        ]),
      413,
    );
    expect(two.json().error).toMatch(/one file/);
  });

  it('a body that is not multipart -> 415 in the version\u2019s error format', async () => {
    for (const v of ['2', '3']) {
      const json = await expectNothingStored(
        () => h.request({ method: 'POST', url: `/v1.${v}/messaging/upload`, token: owner.access, payload: { said: widget } }),
        415,
      );
      expect(json.json()).toMatchObject({ code: 'unsupported_media_type' });
      const form = await h.request({
        method: 'POST',
        url: `/v1.${v}/messaging/upload`,
        token: owner.access,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `said=${widget}`,
      });
      expect(form.statusCode).toBe(415);
    }
    const legacy = await h.request({
      method: 'POST',
      url: '/v1.1/messaging/upload',
      token: owner.access,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `said=${widget}`,
    });
    expect(legacy.statusCode).toBe(415);
    expect(legacy.json()).toEqual({ statusCode: 415, message: 'Upload needs a multipart/form-data body' });
  });

  it('a malformed multipart body -> 400', async () => {
    const noBoundary = await expectNothingStored(
      () =>
        h.request({
          method: 'POST',
          url: '/v1.3/messaging/upload',
          token: owner.access,
          headers: { 'content-type': 'multipart/form-data' },
          body: 'garbage',
        }),
      400,
    );
    expect(noBoundary.json().code).toBe('validation_failed');
    const cut = await expectNothingStored(
      () =>
        h.request({
          method: 'POST',
          url: '/v1.3/messaging/upload',
          token: owner.access,
          headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
          body: '--XyZ\r\nContent-Disposition: form-data; name="media"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhalf a fi',
        }),
      400,
    );
    expect(cut.json().code).toBe('validation_failed');
  });

  it('needs a token (401 before the body is read)', async () => {
    await expectNothingStored(
      () =>
        upload(
          '3',
          [
            ['said', String(widget)],
            ['media', pngFile()],
          ],
          '',
        ),
      401,
    );
  });

  it('other routes still refuse multipart bodies (the parser is scoped to upload)', async () => {
    const { body, contentType } = await multipartBody([['title', 'x']]);
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks',
      token: owner.access,
      headers: { 'content-type': contentType },
      body,
    });
    expect(res.statusCode).toBe(415);
  });
});
