import type { LeadListEntry } from '../../domain/leads/leads.types.js';
import { textsOf, type Locale } from '../../i18n/index.js';
import { LEAD_CSV_COLUMNS } from '../../i18n/texts.js';

/**
 * A cell as spreadsheets read it safely: text starting with `=`, `+`, `-`, `@`, a tab or a carriage
 * return would run as a formula in Excel, LibreOffice or Google Sheets (CSV injection), so it gets a
 * leading apostrophe, which they show as text; every cell is quoted, quotes doubled (RFC 4180).
 * Numbers we write ourselves are left as numbers.
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '""';
  if (typeof value === 'number') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${text.replace(/"/g, '""')}"`;
}

export function csvLine(cells: Array<string | number | null | undefined>): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function csvRow(entry: LeadListEntry, statusNames: Map<number, string>, locale: Locale = 'en'): string {
  const { lead, customer, integration, message, tags } = entry;
  return csvLine([
    lead.id,
    iso(lead.created_at),
    iso(lead.updated_at),
    lead.status_type,
    lead.status_id,
    lead.status_id === null ? null : (statusNames.get(lead.status_id) ?? null),
    lead.user_id,
    integration.id,
    integration.type,
    integration.login,
    customer.id,
    customer.name,
    customer.phone,
    customer.email,
    lead.amount,
    lead.details,
    lead.address,
    lead.ttn,
    tags.join('; '),
    lead.unread_count,
    iso(lead.last_message_at),
    message ? (message.incoming ? textsOf(locale).leadsCsv.yes : textsOf(locale).leadsCsv.no) : null,
    message?.text ?? null,
  ]);
}

/** The header line in the requesting employee's language (src/i18n), after a UTF-8 byte order mark (Excel reads the file as UTF-8 only with it). */
export function csvHead(locale: Locale = 'en'): string {
  return `\ufeff${csvLine(LEAD_CSV_COLUMNS.map((c) => textsOf(locale).leadsCsv.columns[c]))}`;
}
