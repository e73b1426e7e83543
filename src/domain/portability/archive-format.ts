import type { Database } from '../../db/schema.js';

/**
 * The account archive (docs/export-format.md): a gzip-compressed tar holding `manifest.json`, then
 * each section's records as NDJSON parts (`<section>/<n>.ndjson`, at most PART_RECORDS records
 * each) in SECTIONS order, and each file's bytes as `files/<file id>` right after the `files`
 * section. The order is the order of references: a record only names records of earlier sections,
 * so an importer can stream the archive once.
 */
export const FORMAT_NAME = 'parley-account-export';
export const FORMAT_VERSION = 1;
/** Records per NDJSON part: a part is held in memory while written (tar needs each entry's size). */
export const PART_RECORDS = 5000;
export const PART_BYTES = 8 * 1024 * 1024;

export type TableName = keyof Database;

export interface SectionSpec {
  /** The section name in the archive. */
  name: string;
  table: TableName;
  /** Columns written (besides `id`, which every section but lead_tags has). */
  columns: string[];
  /** Columns holding the id of a record of another section, by that section's name. */
  refs: Record<string, string>;
  /** False for lead_tags (a link without an id of its own). */
  hasId: boolean;
}

const section = (name: string, table: TableName, columns: string[], refs: Record<string, string> = {}, hasId = true): SectionSpec => ({
  name,
  table,
  columns,
  refs,
  hasId,
});

/**
 * What is exported, table by table. Secrets never leave: employees' password hashes, integration
 * credentials, channel tokens and webhook secrets are not columns here; sessions, API keys,
 * plugins, invitations, the event outbox and webhook deliveries are not exported at all.
 */
export const SECTIONS: SectionSpec[] = [
  section('employees', 'users', ['login', 'name', 'role', 'confirmed', 'allow_all_deals', 'allowed_users', 'metadata', 'created_at']),
  section('integrations', 'integrations', [
    'type',
    'login',
    'avatar',
    'external_id',
    'identifier',
    'url',
    'status',
    'settings',
    'user_mappings',
    'created_at',
    'deleted_at',
  ]),
  section('employee_integrations', 'user_sources', ['user_id', 'sa_id'], { user_id: 'employees', sa_id: 'integrations' }),
  section('statuses', 'statuses', ['name', 'type', 'position', 'color', 'created_at']),
  section('payment_types', 'payment_types', ['title']),
  section('tags', 'tags', ['tag', 'tag_key', 'created_at']),
  section('template_groups', 'template_groups', ['key', 'created_at']),
  section('templates', 'templates', ['group_id', 'template', 'hotkey', 'user_id', 'created_at'], {
    group_id: 'template_groups',
    user_id: 'employees',
  }),
  section('customers', 'customers', ['name', 'login', 'avatar', 'email', 'phone', 'address', 'created_at', 'updated_at']),
  section(
    'profiles',
    'profiles',
    ['customer_id', 'integration_id', 'type', 'social_id', 'login', 'name', 'avatar', 'profile_url', 'created_at'],
    { customer_id: 'customers', integration_id: 'integrations' },
  ),
  section('files', 'files', ['num', 'name', 'mime', 'size', 'md5', 'created_at']),
  section('channels', 'sources', ['integration_id', 'customer_id', 'external_id', 'type', 'name', 'sender', 'created_at'], {
    integration_id: 'integrations',
    customer_id: 'customers',
  }),
  section(
    'leads',
    'leads',
    [
      'integration_id',
      'customer_id',
      'user_id',
      'status_id',
      'status_type',
      'details',
      'amount',
      'address',
      'ttn',
      'custom_data',
      'custom_fields',
      'payment_type_id',
      'items',
      'unread_count',
      'last_message_id',
      'last_message_at',
      'last_message_incoming',
      'awaiting_since',
      'response_time',
      'responded_at',
      'created_at',
      'updated_at',
    ],
    // last_message_id names a message, a later section: the importer sets it after the messages.
    {
      integration_id: 'integrations',
      customer_id: 'customers',
      user_id: 'employees',
      status_id: 'statuses',
      payment_type_id: 'payment_types',
    },
  ),
  section('lead_tags', 'lead_tags', ['lead_id', 'tag_id', 'created_at'], { lead_id: 'leads', tag_id: 'tags' }, false),
  section(
    'messages',
    'messages',
    [
      'lead_id',
      'source_id',
      'integration_id',
      'external_id',
      'incoming',
      'text',
      'url',
      'attachments',
      'reply_to',
      'preview',
      'profile_id',
      'user_id',
      'custom_id',
      'unread',
      'created_at',
    ],
    { lead_id: 'leads', source_id: 'channels', integration_id: 'integrations', profile_id: 'profiles', user_id: 'employees' },
  ),
  section('webhooks', 'webhooks', ['url', 'name', 'status', 'events', 'api_version', 'failing_since', 'created_at']),
];

export const SECTION_BY_NAME = new Map(SECTIONS.map((s) => [s.name, s]));

/** `manifest.json`, the archive's first entry. */
export interface Manifest {
  format: typeof FORMAT_NAME;
  version: number;
  /** Random id of this export: an installation imports an archive once (idempotent re-runs). */
  exportId: string;
  createdAt: string;
  parleyVersion: string;
  account: { id: number; name: string; plan: unknown; created_at: number };
  /** Records per section, as counted when the export started (progress only; never trusted). */
  counts: Record<string, number>;
}

export type ArchiveRecord = Record<string, unknown>;

/** A part's entry name: `messages/000003.ndjson`. */
export function partName(section: string, n: number): string {
  return `${section}/${String(n).padStart(6, '0')}.ndjson`;
}

const PART = /^([a-z_]+)\/\d{6}\.ndjson$/;
const FILE_ENTRY = /^files\/([A-Za-z0-9_-]{22})$/;

/** The last entry: the records and files actually written, per section. */
export const END_ENTRY = 'end.json';

export interface EndRecord {
  counts: Record<string, number>;
  files: number;
}

export type EntryKind =
  | { kind: 'manifest' }
  | { kind: 'end' }
  | { kind: 'part'; section: SectionSpec }
  | { kind: 'file'; id: string }
  | { kind: 'unknown' };

export function entryKind(name: string): EntryKind {
  if (name === 'manifest.json') return { kind: 'manifest' };
  if (name === END_ENTRY) return { kind: 'end' };
  const part = PART.exec(name);
  const spec = part && SECTION_BY_NAME.get(part[1]);
  if (spec) return { kind: 'part', section: spec };
  const file = FILE_ENTRY.exec(name);
  if (file) return { kind: 'file', id: file[1] };
  return { kind: 'unknown' };
}
