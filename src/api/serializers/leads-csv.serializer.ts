import type { LeadListEntry } from '../../domain/leads/leads.types.js';
import type { Locale } from '../../domain/users/users.types.js';

/** Columns of `GET /v1.3/leads/export.csv` (docs/api/data-ownership.md), in order. */
export const CSV_COLUMNS = [
  'id',
  'createdAt',
  'updatedAt',
  'statusType',
  'statusId',
  'status',
  'userId',
  'integrationId',
  'integrationType',
  'integration',
  'customerId',
  'customerName',
  'customerPhone',
  'customerEmail',
  'amount',
  'details',
  'address',
  'ttn',
  'tags',
  'unread',
  'lastMessageAt',
  'lastMessageIncoming',
  'lastMessage',
] as const;

/** The header line and the yes/no cells in the requesting employee's language; the columns stay the same. */
const HEADINGS: Record<Locale, { columns: Record<(typeof CSV_COLUMNS)[number], string>; yes: string; no: string }> = {
  en: { columns: Object.fromEntries(CSV_COLUMNS.map((c) => [c, c])) as Record<(typeof CSV_COLUMNS)[number], string>, yes: 'yes', no: 'no' },
  ru: {
    columns: {
      id: 'Номер',
      createdAt: 'Создан',
      updatedAt: 'Изменён',
      statusType: 'Тип статуса',
      statusId: 'Номер статуса',
      status: 'Статус',
      userId: 'Ответственный (номер)',
      integrationId: 'Номер интеграции',
      integrationType: 'Тип интеграции',
      integration: 'Интеграция',
      customerId: 'Номер клиента',
      customerName: 'Клиент',
      customerPhone: 'Телефон',
      customerEmail: 'Эл. почта',
      amount: 'Сумма',
      details: 'Подробности',
      address: 'Адрес доставки',
      ttn: 'Номер накладной',
      tags: 'Теги',
      unread: 'Непрочитано',
      lastMessageAt: 'Время последнего сообщения',
      lastMessageIncoming: 'Последнее сообщение входящее',
      lastMessage: 'Последнее сообщение',
    },
    yes: 'да',
    no: 'нет',
  },
};

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
    message ? (message.incoming ? HEADINGS[locale].yes : HEADINGS[locale].no) : null,
    message?.text ?? null,
  ]);
}

/** The header line, after a UTF-8 byte order mark (Excel reads the file as UTF-8 only with it). */
export function csvHead(locale: Locale = 'en'): string {
  return `\ufeff${csvLine(CSV_COLUMNS.map((c) => HEADINGS[locale].columns[c]))}`;
}
