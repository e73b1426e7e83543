import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../../services.js';
import { escapeAttr } from '../../domain/widget/widget-admin.js';
import { publicBase } from '../serializers/widget.serializer.js';
import { ROOT_DIR } from '../../root-dir.js';

/** Built by `npm run build` (scripts/build-widget.mjs) from web/widget/. */
export const WIDGET_BUNDLE = path.join(ROOT_DIR, 'dist', 'widget', 'widget.js');

/**
 * `GET /widget.js` (the widget bundle, for any site) and `GET /demo/widget` (a page that embeds the
 * installation's first widget, for trying the loop locally; PARLEY_WIDGET_DEMO=off turns it off).
 */
export function registerWidgetAssetRoutes(app: FastifyInstance, services: Services): void {
  let cached: { mtime: number; body: Buffer } | undefined;
  app.get('/widget.js', { schema: { hide: true } }, async (_req, reply) => {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(WIDGET_BUNDLE);
    } catch {
      return reply
        .code(404)
        .type('application/javascript; charset=utf-8')
        .send('/* Parley: the widget bundle is not built: run `npm run build` */\n');
    }
    if (!cached || cached.mtime !== stat.mtimeMs) cached = { mtime: stat.mtimeMs, body: fs.readFileSync(WIDGET_BUNDLE) };
    return reply
      .type('application/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .header('x-content-type-options', 'nosniff')
      .send(cached.body);
  });

  if (!services.deps.config.widgetDemo) return;
  app.get<{ Querystring: { key?: string; identifier?: string; signature?: string } }>(
    '/demo/widget',
    { schema: { hide: true } },
    async (req, reply) => {
      const base = publicBase(services.deps.config, req);
      const q = req.query;
      const clip = (v: unknown, n: number) => (typeof v === 'string' && v.length <= n ? v : undefined);
      const key = clip(q.key, 80) ?? (await services.widget.sessions.demoWidget())?.key;
      reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('x-frame-options', 'DENY')
        .header('referrer-policy', 'no-referrer');
      if (!key) return reply.send(noWidgetPage(base));
      const identifier = clip(q.identifier, 255);
      const signature = clip(q.signature, 128);
      const identity =
        identifier && signature
          ? ` data-parley-identifier="${escapeAttr(identifier)}" data-parley-signature="${escapeAttr(signature)}"`
          : '';
      return reply.send(demoPage(base, key, identity));
    },
  );
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1f2937}
code,pre{background:#f3f4f6;border-radius:4px;padding:.1rem .3rem;font-size:.9em}pre{padding:.75rem;overflow:auto;white-space:pre-wrap}
h1{font-size:1.6rem}`;

function demoPage(base: string, key: string, identity: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Parley widget demo</title><style>${STYLE}</style></head><body>
<h1>Parley site widget demo</h1>
<p>This page stands for your site. The chat button in the corner is the widget of key <code>${escapeAttr(key)}</code>,
embedded with:</p>
<pre>${escapeAttr(`<script src="${base}/widget.js" data-parley-key="${key}" async></script>`)}</pre>
<p>Open it, write a message: it becomes a lead in Parley. Reply to it with
<code>POST ${escapeAttr(base)}/v1.3/messaging/&lt;leadId&gt;/send</code> and the answer appears here without a reload
(find the lead with <code>GET /v1.3/leads</code>).</p>
<script src="${escapeAttr(base)}/widget.js" data-parley-key="${escapeAttr(key)}"${identity} async></script>
</body></html>`;
}

function noWidgetPage(base: string): string {
  const b = escapeAttr(base);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Parley widget demo</title><style>${STYLE}</style></head><body>
<h1>Parley site widget demo</h1>
<p>No site widget is connected on this installation yet. Connect one (as an account owner), then reload this page:</p>
<pre>TOKEN=$(curl -s ${b}/v1.3/auth/login -H 'content-type: application/json' \\
  -d '{"login":"you@example.com","pass":"your password"}' | node -pe 'JSON.parse(require("fs").readFileSync(0)).accessToken.token')
curl -s ${b}/v1.3/integrations -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
  -d '{"type":"widget","settings":{"title":"Demo shop"}}'</pre>
<p>(No account yet? <code>POST ${b}/v1.3/auth/register</code> with <code>{"login","pass","name"}</code> when sign-up is open,
or <code>npx parley</code> commands; see the README.)</p>
</body></html>`;
}
