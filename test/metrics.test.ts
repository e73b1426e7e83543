import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import { DIALECT } from './helpers/database.js';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/database.js';

const TOKEN = 'metrics-scrape-token-0123456789';

/** The value of one series in Prometheus' text format (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels = ''): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [series, value] = [line.slice(0, line.lastIndexOf(' ')), line.slice(line.lastIndexOf(' ') + 1)];
    if (series === (labels ? `${name}{${labels}}` : name)) return Number(value);
  }
  return undefined;
}

describe('GET /metrics when PARLEY_METRICS_TOKEN is unset', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('does not exist', async () => {
    const res = await h.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(404);
  });
});

describe('GET /metrics with PARLEY_METRICS_TOKEN', () => {
  let h: Harness;
  let owner: SignedUp;
  const scrape = async () => {
    const res = await h.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.body;
  };

  beforeAll(async () => {
    h = await createHarness({ env: { PARLEY_METRICS_TOKEN: TOKEN, PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
    owner = await h.signUp();
  });
  afterAll(() => h.close());

  it('refuses a scrape without the token or with another one', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', TOKEN]) {
      const res = await h.request({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.body).not.toContain('parley_');
    }
  });

  it('counts requests by route template and status, with their latency', async () => {
    const requests = (text: string) => sample(text, 'parley_http_requests_total', 'route="/v1.3/leads/:id",method="GET",status="404"') ?? 0;
    const timed = (text: string) => sample(text, 'parley_http_request_duration_seconds_count', 'route="/v1.3/leads/:id",method="GET"') ?? 0;
    const before = await scrape();
    for (const id of [101, 102, 103]) {
      expect((await h.request({ method: 'GET', url: `/v1.3/leads/${id}`, token: owner.access })).statusCode).toBe(404);
    }
    const text = await scrape();
    expect(requests(text) - requests(before)).toBe(3);
    expect(timed(text) - timed(before)).toBe(3);
    // Raw URLs never become series.
    expect(text).not.toContain('/v1.3/leads/101');
  });

  it('counts ingested messages by channel type, once per message, and the webhook queue behind them', async () => {
    const hook = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks',
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/hook' },
    });
    expect(hook.statusCode).toBe(200);
    const integrationId = await createIntegration(h, owner.accountId, 'widget');
    const integration = await h.database.db.kysely
      .selectFrom('integrations')
      .selectAll()
      .where('id', '=', integrationId)
      .executeTakeFirstOrThrow();
    const incoming = {
      externalId: 'm-1',
      datetime: h.clock.now(),
      sender: { socialId: 'visitor-1', name: 'Ann' },
      channel: { externalId: 'visitor-1', type: 'message' as const },
      text: 'hello',
    };
    // The metrics are the process's: what other harnesses of this process counted comes before.
    const counts = (text: string) => [
      sample(text, 'parley_ingest_messages_total', 'channel="widget",result="stored"') ?? 0,
      sample(text, 'parley_ingest_messages_total', 'channel="widget",result="duplicate"') ?? 0,
      sample(text, 'parley_ingest_duration_seconds_count', 'channel="widget"') ?? 0,
    ];
    const before = counts(await scrape());
    await h.services.ingest.ingest(integration, incoming);
    await h.services.ingest.ingest(integration, incoming); // a redelivery
    h.clock.advance(7_000);

    const text = await scrape();
    // One stored, one duplicate, and the stored one timed.
    expect(counts(text).map((n, i) => n - before[i])).toEqual([1, 1, 1]);
    // No worker runs in this test: the message's events wait for the endpoint.
    expect(sample(text, 'parley_webhook_pending_deliveries')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'parley_webhook_oldest_pending_seconds')).toBe(7);
  });

  it('reports connections, statement times and the event loop', async () => {
    const text = await scrape();
    expect(sample(text, 'parley_realtime_connections', 'kind="agent"')).toBe(0);
    expect(sample(text, 'parley_realtime_connections', 'kind="visitor"')).toBe(0);
    expect(text).toContain('parley_nodejs_eventloop_lag_seconds');
    expect(text).toContain('# TYPE parley_db_query_duration_seconds histogram');
    expect(text).toContain('# TYPE parley_webhook_deliveries_total counter');
    if (DIALECT === 'postgres') expect(sample(text, 'parley_db_pool_connections', 'state="total"')).toBeGreaterThan(0);
    else expect(text).not.toContain('parley_db_pool_connections{');
  });
});

describe('statement timing', () => {
  it("reports every statement to the database's listener, failed ones as failed", async () => {
    const seen: Array<{ ms: number; failed: boolean }> = [];
    const db = await openDatabase({
      databaseUrl: process.env.DATABASE_URL,
      dataDir: '',
      sqliteFile: ':memory:',
      poolSize: 1,
      onQuery: (ms, failed) => seen.push({ ms, failed }),
    });
    try {
      await sql`select 1`.execute(db.kysely);
      await expect(sql`select * from no_such_table`.execute(db.kysely)).rejects.toThrow();
    } finally {
      await db.close();
    }
    expect(seen.map((s) => s.failed)).toEqual([false, true]);
    expect(seen.every((s) => s.ms >= 0)).toBe(true);
  });
});
