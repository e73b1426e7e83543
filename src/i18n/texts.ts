/**
 * The shape of one language of everything Parley writes itself outside the agent app: e-mails,
 * export headers, the names of a new account's statuses and the site widget's visitor texts. Each
 * language is one file beside this one (en.ts, ru.ts) and one line in index.ts. The agent app's
 * texts are its own catalogue (web/app/src/i18n). Only plain data and string functions here: the
 * widget's bundle includes these files.
 */

/** The columns of `GET /v1.3/leads/export.csv` (docs/api/data-ownership.md), in order. */
export const LEAD_CSV_COLUMNS = [
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
export type LeadCsvColumn = (typeof LEAD_CSV_COLUMNS)[number];

/** The statuses a new account starts with (src/domain/statuses/statuses.types.ts). */
export type DefaultStatus = 'new' | 'inProgress' | 'won' | 'lost' | 'notALead';

export interface InvitationFacts {
  inviter: string;
  account: string;
  link: string;
  /** The expiry, already formatted in the language. */
  expires: string;
}

/** Every text the site widget writes itself; the owner's own title and greeting stay as written. */
export interface WidgetTexts {
  /** Parley's default title, greeting and offline message, shown while the owner keeps them. */
  title: string;
  greeting: string;
  offlineMessage: string;
  open: (title: string) => string;
  close: string;
  closeTitled: (title: string) => string;
  unread: (n: number) => string;
  name: string;
  email: string;
  phone: string;
  optional: string;
  start: string;
  fillRequired: string;
  unavailable: string;
  tooMany: (seconds: number) => string;
  messages: string;
  placeholder: string;
  message: string;
  attach: string;
  removeAttachment: string;
  send: string;
  historyFailed: string;
  notSent: string;
  checkFields: string;
  failed: string;
  image: string;
  file: string;
  kb: (n: number) => string;
  typing: (title: string) => string;
}

export interface LanguageTexts {
  /** The BCP 47 tag dates and numbers are written with (`Intl`). */
  intl: string;
  /** The invitation e-mail (docs/api/resources.md "Employee (manager)"). */
  invitation: {
    subject: (account: string) => string;
    /** Who invites, when the inviter has no name. */
    owner: string;
    body: (facts: InvitationFacts) => string[];
  };
  /** The header line and the yes/no cells of the lead export; the columns themselves never change. */
  leadsCsv: { columns: Record<LeadCsvColumn, string>; yes: string; no: string };
  defaultStatuses: Record<DefaultStatus, string>;
  widget: WidgetTexts;
}
