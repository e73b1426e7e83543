import type { SwaggerOptions } from '@fastify/swagger';
import type { Config } from '../config.js';
import { VERSION } from '../version.js';

/**
 * The OpenAPI document as a product: the route schemas stay the single source, and this module
 * turns fastify-swagger's raw output into a document integrators and code generators can use —
 * named component schemas instead of copies, an operationId for every operation, described tags,
 * `servers`. The lint rules it is held to are in redocly.yaml (`npm run openapi:lint`).
 */

/** Every tag an operation carries, with what it covers. A route with a tag not listed here fails the test. */
export const TAGS: Record<string, string> = {
  auth: 'Sign-in, token refresh and sign-out (docs/api/auth.md).',
  account: 'The account, its owner, tariff and API keys (docs/api/integrations.md).',
  employees: 'Employees (managers), invitations and access rules (docs/api/auth.md).',
  customers: 'Customers and their profiles on each channel (docs/api/resources.md).',
  leads: 'Leads: lists, funnel, statistics, editing, reading and accepting (docs/api/leads.md).',
  statuses: 'Lead statuses of the funnel (docs/api/leads.md).',
  tags: 'Tags of the account and on leads (docs/api/leads.md).',
  templates: 'Reply templates and their groups (docs/api/leads.md).',
  'payment-types': 'Payment types a lead may carry (docs/api/leads.md).',
  messaging: 'Sources, history, sending, write first, contact checks and uploads (docs/api/messaging.md).',
  search: 'Message and customer search (docs/api/messaging.md).',
  integrations: 'Connected channels and their settings (docs/api/integrations.md).',
  webhooks: 'Webhook endpoints and their deliveries (docs/api/webhooks.md).',
  plugins: 'Plugins: third-party code acting for the account (docs/api/integrations.md).',
  realtime: "The agent app's live event stream (docs/api/webhooks.md).",
  widget: "The site widget's settings (docs/channels/ and docs/api/integrations.md).",
  'widget visitors': "The site widget's visitor protocol, used by the widget script.",
  channels: "Providers' webhooks: where messenger platforms deliver their events (docs/channels/).",
  files: 'Uploaded files, served to customers and providers.',
  system: 'Connectivity, liveness and readiness checks.',
  oauth: 'OAuth 2 for third-party apps: apps, consent, token and revocation endpoints, metadata (docs/api/oauth.md).',
  devices: "Employees' devices for push notifications (docs/api/push.md).",
  automation: 'Distribution of new leads, working hours, rules (docs/api/automation.md).',
  data: 'Owning your data: account exports, the leads CSV, retention (docs/api/data-ownership.md).',
};

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked and rewritten as plain JSON
type Json = Record<string, any>;

/** The options of @fastify/swagger: document metadata, and the post-processing below. */
export function swaggerOptions(config: Config): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley API',
        version: VERSION,
        description:
          'Customer messaging inbox. Versions /v1.1, /v1.2 and /v1.3 are served side by side; v1.3 is the ' +
          'reference. The contract in prose (what the fields mean, the choices made, the version differences) ' +
          'is in the repository under docs/api/.',
        license: { name: 'MIT', identifier: 'MIT' },
      },
      servers: [
        config.publicUrl
          ? { url: config.publicUrl.replace(/\/+$/, ''), description: 'This installation' }
          : { url: '/', description: 'The server that serves this document' },
      ],
      tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'Authorization: Bearer <jwt>, JWT <jwt>, or the bare <jwt>',
          },
        },
      },
      security: [{ bearer: [] }],
    },
    transformObject: (doc) => finishDocument((doc as { openapiObject: Json }).openapiObject),
  };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Names operations, and moves every titled schema into `components.schemas` behind a `$ref`. */
export function finishDocument(doc: Json): Json {
  const named = new Map<string, { json: string; name: string }[]>();
  const schemas: Json = {};
  const seenIds = new Set<string>();
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      op.operationId ??= uniqueId(operationId(method, path), seenIds);
      seenIds.add(op.operationId);
      item[method] = hoist(op, versionOf(path), named, schemas);
    }
  }
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, ...sortKeys(schemas) } };
  return doc;
}

/** `GET /v1.3/leads/{id}/notes` -> `getLeadsByIdNotes_v1_3`; unversioned paths carry no suffix. */
export function operationId(method: string, path: string): string {
  const version = versionOf(path);
  const words = path
    .split('/')
    .filter((s) => s && s !== version)
    .map((s) => (s.startsWith('{') ? `By-${s.slice(1, -1)}` : s))
    .flatMap((s) => s.split(/[^A-Za-z0-9]+/))
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1));
  const base = method.toLowerCase() + (words.join('') || 'Root');
  return version ? `${base}_${version.replace('.', '_')}` : base;
}

function uniqueId(id: string, seen: Set<string>): string {
  let candidate = id;
  for (let n = 2; seen.has(candidate); n++) candidate = `${id}${n}`;
  return candidate;
}

function versionOf(path: string): string | undefined {
  return /^\/(v\d+\.\d+)\//.exec(path)?.[1];
}

/**
 * Replaces each schema with a `title` by a reference to `#/components/schemas/<Title>`. One title
 * whose shape differs between versions (the v1.1 History message) gets the version as a suffix.
 */
// biome-ignore lint/suspicious/noExplicitAny: any JSON node of the document (object, array or value), rebuilt as it is walked
function hoist(node: any, version: string | undefined, named: Map<string, { json: string; name: string }[]>, schemas: Json): any {
  if (Array.isArray(node)) return node.map((n) => hoist(n, version, named, schemas));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = hoist(v, version, named, schemas);
  const title = typeof node.title === 'string' && isSchema(node) ? node.title : undefined;
  if (!title) return out;
  const json = JSON.stringify(out);
  const variants = named.get(title) ?? [];
  let variant = variants.find((v) => v.json === json);
  if (!variant) {
    const name = variants.length === 0 ? title : `${title}_${(version ?? `variant${variants.length + 1}`).replace('.', '_')}`;
    variant = { json, name: uniqueId(name, new Set(variants.map((v) => v.name))) };
    variants.push(variant);
    named.set(title, variants);
    schemas[variant.name] = out;
  }
  return { $ref: `#/components/schemas/${variant.name}` };
}

function isSchema(node: Json): boolean {
  return 'type' in node || 'properties' in node || 'anyOf' in node || 'oneOf' in node || 'allOf' in node;
}

function sortKeys(o: Json): Json {
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  );
}
