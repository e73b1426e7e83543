import { Type, type TSchema } from 'typebox';
import type { LeadRow } from '../../db/schema.js';
import { presentLead } from '../../domain/leads/lead-presenter.js';
import type { FunnelColumn, LeadListEntry, LeadStatistics } from '../../domain/leads/leads.types.js';
import { STATUS_TYPES } from '../../domain/statuses/statuses.types.js';
import { isoTime } from './time.js';
import { serializeStatus } from './statuses.serializer.js';

/** docs/api/resources.md "Lead": the list item, the single lead, funnel columns and v1.3 statistics; the same in every version. */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const Attachment = Type.Object(
  {
    type: Type.String({ description: 'photo, doc, link, video, audio, sticker or market' }),
    url: Type.String(),
    text: Type.Optional(Type.String({ description: 'File name' })),
  },
  { description: 'Attachment' },
);

const Item = Type.Object(
  {
    title: Type.String(),
    count: Type.Integer(),
    id: Type.Optional(Type.Unknown({ description: "Id in the client's system (usually an integer)" })),
    link: Type.Optional(Type.Unknown({ description: 'Link to the goods (usually a string)' })),
  },
  {
    additionalProperties: true,
    title: 'GoodsItem',
    description: 'Goods item: `title` and `count` always, anything else as it was written',
  },
);

const common = {
  id: Type.Integer(),
  userId: Nullable(Type.Integer({ description: 'Responsible employee; null: unassigned' })),
  statusId: Nullable(Type.Integer({ description: 'Status; null: the lead is in the inbox' })),
  read: Type.Boolean({ description: 'No unread incoming message' }),
  details: Type.String({ description: 'Comment' }),
  amount: Type.Integer({ description: 'Lead value' }),
  responseTime: Nullable(
    Type.Number({
      description: 'Milliseconds from the first unanswered incoming message to the answer; null while the customer has the last word',
    }),
  ),
};

const tail = {
  address: Type.String(),
  ttn: Type.String({ description: 'Consignment note number' }),
  customData: Type.String({ description: 'Free data of the integrator' }),
  customFields: Type.String({ description: 'JSON text of the customFields object as written (`{}` when never written)' }),
  paymentTypeId: Nullable(Type.Integer()),
  items: Type.Array(Item),
};

export const LeadListItemObject = Type.Object(
  {
    ...common,
    tags: Type.Array(Type.String(), { description: 'Tag values, sorted without case' }),
    socialAccount: Type.Object(
      { id: Type.Integer(), login: Type.String(), type: Type.String() },
      { description: 'Integration that received the lead' },
    ),
    customer: Type.Object({
      id: Type.Integer(),
      login: Type.String(),
      name: Type.String(),
      avatar: Type.String(),
      email: Nullable(Type.String()),
      phone: Nullable(Type.String()),
    }),
    message: Nullable(
      Type.Object(
        {
          unread: Type.Integer({ description: 'Count of unread incoming messages of the lead' }),
          timestamp: Type.String({ description: 'ISO 8601 UTC with milliseconds' }),
          incoming: Type.Boolean(),
          data: Type.Object({ text: Type.String(), url: Type.String(), attachments: Type.Array(Attachment) }),
        },
        {
          title: 'LeadLastMessage',
          description: 'The last message; null for a lead without messages (one created through POST /v1.3/leads)',
        },
      ),
    ),
    ...tail,
    createdAt: Type.String({ description: 'ISO 8601 UTC with milliseconds' }),
  },
  { title: 'LeadListItem', description: 'Lead (list item)' },
);

/**
 * The v1.3 lists' item: also `awaitingSince`. The item is presented once for every version; the
 * older versions' schema leaves the field out of their answers.
 */
export const LeadListItemV13Object = Type.Object(
  {
    ...LeadListItemObject.properties,
    awaitingSince: Nullable(
      Type.Integer({
        description:
          "Since when the customer waits for an answer (Unix ms): the first incoming message after the last answer; null when nothing awaits one. Compare it with the account's first-response target (docs/api/automation.md)",
      }),
    ),
  },
  { title: 'LeadListItemV13', description: 'Lead (list item), v1.3' },
);

export const LeadObject = Type.Object(
  {
    ...common,
    customerId: Type.Integer(),
    timestamp: Type.String({
      description: 'Time of the last message (of the creation for a lead without messages), ISO 8601 UTC with milliseconds',
    }),
    ...tail,
  },
  { title: 'Lead', description: 'Lead (single)' },
);

export const FunnelColumnObject = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    order: Type.Integer(),
    type: Type.Enum([...STATUS_TYPES]),
    color: Type.String(),
    leads: Type.Array(LeadListItemObject),
  },
  { title: 'FunnelColumn', description: 'Funnel element: a status with a page of its leads' },
);

const ResponseTimeObject = Type.Object({
  median: Nullable(Type.Number({ description: 'Median responseTime in ms; null when none is known' })),
  count: Type.Integer({ description: 'Leads with a known responseTime' }),
});

/** docs/api/leads.md "statistics": a sum of integer amounts may pass 2^53, which a JSON number does not carry exactly. */
const AmountSum = Type.String({
  pattern: '^-?[0-9]+$',
  description: 'Exact sum of the leads\' `amount`, as a decimal integer string ("0" when there are none)',
});

export const LeadStatisticsObject = Type.Object(
  {
    lists: Type.Object(
      {
        inbox: Type.Integer(),
        active: Type.Integer(),
        completed: Type.Integer({ description: 'Statuses of types completed and failed' }),
        all: Type.Integer({ description: 'Every lead except those in ignore statuses' }),
        ignore: Type.Integer({ description: 'Leads in ignore statuses (not leads)' }),
      },
      { description: 'Lead counts per list' },
    ),
    amounts: Type.Optional(
      Type.Object(
        {
          inbox: AmountSum,
          active: AmountSum,
          completed: AmountSum,
          all: AmountSum,
          ignore: AmountSum,
        },
        { description: "Sums of the leads' `amount` per list, as `lists` counts them; with `amounts=true` (v1.3 extension)" },
      ),
    ),
    statuses: Type.Array(
      Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        type: Type.Enum([...STATUS_TYPES]),
        count: Type.Integer(),
        amount: Type.Optional(AmountSum),
      }),
      {
        description: 'Every status of the account in list order, with its lead count (and, with `amounts=true`, the sum of their amounts)',
      },
    ),
    newLeads: Type.Array(Type.Object({ date: Type.String({ description: 'UTC day, YYYY-MM-DD' }), count: Type.Integer() }), {
      description: 'Leads created per UTC day, ascending; days without new leads are left out',
    }),
    responseTime: Type.Object(
      {
        median: Nullable(Type.Number({ description: 'Median responseTime in ms (mean of the two middle ones for an even count)' })),
        count: Type.Integer({ description: 'Leads with a known responseTime' }),
        withinTarget: Type.Optional(
          Type.Integer({
            description:
              "Of `count`, the leads answered within the account's first-response target (docs/api/automation.md); only when the account has a target",
          }),
        ),
      },
      { description: 'Over the leads with a known responseTime' },
    ),
    employees: Type.Optional(
      Type.Array(
        Type.Object({
          userId: Nullable(Type.Integer({ description: 'Responsible employee; null: unassigned leads' })),
          count: Type.Integer(),
          responseTime: ResponseTimeObject,
        }),
        { description: 'Per responsible employee, most leads first; with `breakdowns=true` (v1.3 extension)' },
      ),
    ),
    channels: Type.Optional(
      Type.Array(
        Type.Object({ type: Type.String({ description: 'Integration type' }), count: Type.Integer(), responseTime: ResponseTimeObject }),
        { description: 'Per channel (integration) type, most leads first; with `breakdowns=true` (v1.3 extension)' },
      ),
    ),
  },
  { description: 'Lead statistics' },
);

export function serializeLead(lead: LeadRow) {
  return presentLead(lead);
}

/**
 * List entries may be shared by requests (the leads read cache keeps them while nothing changes):
 * each one is presented once. Entries are never mutated, so the memo cannot go stale.
 */
const presented = new WeakMap<LeadListEntry, ReturnType<typeof presentListItem>>();

export function serializeLeadListItem(entry: LeadListEntry) {
  let item = presented.get(entry);
  if (!item) {
    item = presentListItem(entry);
    presented.set(entry, item);
  }
  return item;
}

function presentListItem(entry: LeadListEntry) {
  const { lead, customer, integration, message, tags } = entry;
  return {
    id: lead.id,
    userId: lead.user_id,
    statusId: lead.status_id,
    read: lead.unread_count === 0,
    details: lead.details,
    amount: lead.amount,
    tags,
    socialAccount: integration,
    responseTime: lead.response_time,
    customer,
    message: message && {
      unread: lead.unread_count,
      timestamp: isoTime(message.createdAt),
      incoming: message.incoming,
      data: { text: message.text, url: message.url, attachments: message.attachments },
    },
    address: lead.address,
    ttn: lead.ttn,
    customData: lead.custom_data,
    customFields: lead.custom_fields,
    paymentTypeId: lead.payment_type_id,
    items: JSON.parse(lead.items) as unknown[],
    createdAt: isoTime(lead.created_at),
    awaitingSince: lead.awaiting_since,
  };
}

export function serializeFunnelColumn(column: FunnelColumn) {
  return { ...serializeStatus(column.status), leads: column.entries.map(serializeLeadListItem) };
}

export function serializeStatistics(stats: LeadStatistics) {
  return {
    lists: stats.lists,
    ...(stats.amounts ? { amounts: mapValues(stats.amounts, String) } : {}),
    statuses: stats.statuses.map(({ status, count, amount }) => ({
      id: status.id,
      name: status.name,
      type: status.type,
      count,
      ...(amount === undefined ? {} : { amount: String(amount) }),
    })),
    newLeads: stats.newLeads,
    responseTime: stats.responseTime,
    ...(stats.employees ? { employees: stats.employees } : {}),
    ...(stats.channels ? { channels: stats.channels } : {}),
  };
}

function mapValues<K extends string, V, W>(o: Record<K, V>, f: (v: V) => W): Record<K, W> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v as V)])) as Record<K, W>;
}
