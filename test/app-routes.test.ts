import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import { appIndexHtml } from '../src/api/routes/app.routes.js';
import { APP_ROUTES } from '../web/app/src/routes.js';

/** A reload or a bookmark of any page of the agent app gets the app, never the API's JSON 404 (CI builds the app first). */
let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('pages of the agent app', () => {
  it('the app is built (npm run build), so that the pages can be served', () => {
    expect(appIndexHtml()).toBeDefined();
  });

  it.each(APP_ROUTES)('%s loads directly', async (url) => {
    const res = await h.request({ method: 'GET', url, headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toBe(appIndexHtml());
  });

  it('keeps the API and unknown paths out: they still answer the JSON 404', async () => {
    for (const url of ['/v1.3/nothing-here', '/helpx', '/reportsx']) {
      const res = await h.request({ method: 'GET', url });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    }
  });
});
