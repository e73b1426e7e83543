import { Readable } from 'node:stream';
import { Type, type TSchema } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { IdParams } from '../schemas/common.js';
import { parseLeadFilters } from '../../domain/leads/lead-filters.js';
import { MAX_RETENTION_DAYS } from '../../domain/retention/retention.service.js';
import type { AccountExportRow } from '../../db/schema.js';
import { csvHead, csvRow } from '../serializers/leads-csv.serializer.js';
import { knownLocale } from '../../domain/users/users.types.js';
import { baseQuery, extendedQuery } from './leads.routes.js';

const tags = ['data'];

/** A download, documented under its own media type (fastify sends streams as they are). */
const Download = (mime: string, description: string) =>
  ({ description, content: { [mime]: { schema: { type: 'string', format: 'binary' } } } }) as unknown as TSchema;

const ExportObject = Type.Object({
  id: Type.Integer(),
  status: Type.Union(
    ['queued', 'running', 'ready', 'failed', 'expired'].map((s) => Type.Literal(s)),
    {
      description: '`queued` -> `running` -> `ready` (downloadable until `expiresAt`) -> `expired`; or `failed` (see `error`)',
    },
  ),
  progress: Type.Object(
    { done: Type.Integer(), total: Type.Integer() },
    { description: 'Records and files written out of those counted at the start' },
  ),
  size: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes of the finished archive' }),
  createdAt: Type.String({ format: 'date-time' }),
  finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  downloadUrl: Type.Union([Type.String(), Type.Null()], { description: 'Path of the archive while `ready`' }),
});

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

function serializeExport(row: AccountExportRow) {
  return {
    id: Number(row.id),
    status: row.status,
    progress: { done: Number(row.done), total: Number(row.total) },
    size: row.size === null ? null : Number(row.size),
    createdAt: new Date(Number(row.created_at)).toISOString(),
    finishedAt: iso(row.finished_at),
    expiresAt: iso(row.expires_at),
    error: row.error,
    downloadUrl: row.status === 'ready' ? `/v1.3/account/me/exports/${row.id}/download` : null,
  };
}

const Days = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_RETENTION_DAYS }), Type.Null()]);
const RetentionObject = Type.Object({
  messagesDays: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Messages older than this many days are deleted; null: kept forever',
  }),
  filesDays: Type.Union([Type.Integer(), Type.Null()], {
    description: 'Uploaded and received files older than this many days are deleted; null: kept forever',
  }),
});

export const dataOwnershipRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/leads/export.csv',
    schema: (version) => {
      const { offset: _o, limit: _l, ...filters } = baseQuery(version, true);
      return {
        tags,
        summary: 'The leads of the list filters as a CSV file for spreadsheets (UTF-8, one header line)',
        description:
          'Every filter of `GET /leads` applies, without paging: every lead the caller may see, in list order. Text cells starting with ' +
          '`=`, `+`, `-`, `@`, a tab or a carriage return get a leading apostrophe so that spreadsheets do not run them as formulas.',
        querystring: Type.Object({ ...filters, ...extendedQuery }),
        response: { 200: Download('text/csv', 'The leads, one per line after the header line') },
      };
    },
    handler: async (req, reply, { services, auth }) => {
      const filters = parseLeadFilters(req.query as Record<string, unknown>, { list: 'leads', extended: true });
      const statusNames = new Map((await services.statuses.list(auth)).map((s) => [Number(s.id), s.name]));
      const pages = services.leads.pages(auth, 'leads', filters);
      // Headers in the requesting employee's language (docs/api/data-ownership.md); the columns never change.
      const locale = knownLocale(auth.user.locale) ?? 'en';
      async function* lines() {
        yield csvHead(locale);
        for await (const page of pages) yield page.map((e) => csvRow(e, statusNames, locale)).join('');
      }
      reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="leads.csv"');
      return reply.send(Readable.from(lines()));
    },
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/account/me/exports',
    ownerOnly: true,
    optionalBody: true,
    schema: {
      tags,
      summary: 'Export the whole account (owner only): queues a job and answers it (status `queued`)',
      description:
        'A background job writes the account archive (docs/export-format.md in the repository); read its progress with `GET`, download it ' +
        'once `ready` until `expiresAt`. One job at a time per account: another while one is queued or running answers 409.',
      response: { 200: ExportObject },
    },
    handler: async (_req, _reply, { services, auth }) => serializeExport(await services.exports.create(auth)),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/exports',
    ownerOnly: true,
    schema: { tags, summary: "The account's last 20 exports, newest first (owner only)", response: { 200: Type.Array(ExportObject) } },
    handler: async (_req, _reply, { services, auth }) => (await services.exports.list(auth)).map(serializeExport),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/exports/:id',
    ownerOnly: true,
    schema: { tags, summary: 'One export and its progress (owner only)', params: IdParams, response: { 200: ExportObject } },
    handler: async (req, _reply, { services, auth }) => serializeExport(await services.exports.get(auth, req.params.id)),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/exports/:id/download',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'The finished archive, application/gzip (owner only)',
      description: 'Not finished yet: 409 `export_not_ready`. Expired or failed: 410 `export_gone`.',
      params: IdParams,
      response: { 200: Download('application/gzip', 'The account archive') },
    },
    handler: async (req, reply, { services, auth }) => {
      const { row, stream } = await services.exports.download(auth, req.params.id);
      reply
        .type('application/gzip')
        .header('content-length', String(row.size))
        .header('content-disposition', `attachment; filename="parley-account-${auth.accountId}-export-${row.id}.tar.gz"`);
      return reply.send(stream);
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/me/retention',
    ownerOnly: true,
    schema: { tags, summary: 'How long the account keeps messages and files (owner only)', response: { 200: RetentionObject } },
    handler: async (_req, _reply, { services, auth }) => services.retention.settings(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/account/me/retention',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Set how long the account keeps messages and files (owner only); answers the settings',
      description:
        `Days from 1 to ${MAX_RETENTION_DAYS}, or null for forever (the default). Fields left out keep their value. A background job ` +
        'deletes older messages and files in small batches; deletion cannot be undone.',
      body: Type.Object({ messagesDays: Type.Optional(Days), filesDays: Type.Optional(Days) }, { additionalProperties: false }),
      response: { 200: RetentionObject },
    },
    handler: async (req, _reply, { services, auth }) => services.retention.update(auth, req.body),
  }),
];
