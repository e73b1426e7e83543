import { Type, type TSchema } from 'typebox';
import { ALL, defineRoute, V13, type RouteDef } from '../route.js';
import { Id, IdParams } from '../schemas/common.js';
import { VERSION_TRAITS, type ApiVersion } from '../versions.js';
import {
  FunnelColumnObject,
  LeadListItemObject,
  LeadListItemV13Object,
  LeadObject,
  LeadStatisticsObject,
  serializeFunnelColumn,
  serializeLead,
  serializeLeadListItem,
  serializeStatistics,
} from '../serializers/leads.serializer.js';
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_VALUES, parseLeadFilters, parseLeadQuery } from '../../domain/leads/lead-filters.js';
import { FIELD_LIMITS } from '../../domain/leads/lead-fields.js';
import { UNREAD_FILTERS, type LeadList } from '../../domain/leads/leads.types.js';

const tags = ['leads'];
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const REPEAT = 'Repeat the parameter (`a=1&a=2`), separate values with commas (`a=1,2`), or write `a[]=1&a[]=2`; values are alternatives.';
const repeated = (description: string) =>
  Type.Optional(Type.Array(Type.String({ maxLength: 4000 }), { maxItems: MAX_VALUES, description: `${description} ${REPEAT}` }));

/** The list parameters of every version (docs/api/leads.md). `limit` above 200: 400, or clamped where the version clamps. */
export function baseQuery(version: ApiVersion, withStatuses: boolean) {
  const clamp = VERSION_TRAITS[version].clampLimit;
  return {
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'Leads to skip (default 0)' })),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        ...(clamp ? {} : { maximum: MAX_LIMIT }),
        description: `Leads per page, default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}${clamp ? ' (larger values are clamped)' : ''}`,
      }),
    ),
    types: repeated('Integration types; an unknown type matches nothing.'),
    sa: repeated('Integration ids (integers).'),
    tags: repeated('Tag values (exact); leads carrying any of them. A tag containing a comma cannot be filtered on.'),
    users: repeated('Employee ids (integers): leads assigned to any of them.'),
    ...(withStatuses ? { statuses: repeated('Status ids (integers). Not accepted by the inbox (400).') } : {}),
  };
}

/** v1.3 filters (docs/api/leads.md). */
export const extendedQuery = {
  customer: Type.Optional(Type.Integer({ minimum: 0, description: 'Customer id' })),
  source_types: repeated(
    '`message` or `comment` (comment covers comment, photo, video and market channels): leads with a message through such a channel. Other values: 400.',
  ),
  unread: Type.Optional(
    Type.Enum([...UNREAD_FILTERS], {
      description:
        '`unread`: has unread incoming messages; `read`: has none; `unanswered`: the last message is incoming; `answered`: the last message is outgoing. Other values: 400.',
    }),
  ),
  lastMessageFrom: Type.Optional(Type.Integer({ minimum: 0, description: 'Last message at or after this instant (Unix ms)' })),
  overdue: Type.Optional(
    Type.Boolean({
      description:
        "`true`: open leads (inbox and active) whose customer has waited for an answer longer than the account's first-response target " +
        '(docs/api/automation.md; none without a target); `false`: the others.',
    }),
  ),
  lastMessageTo: Type.Optional(Type.Integer({ minimum: 0, description: 'Last message at or before this instant (Unix ms)' })),
  createdFrom: Type.Optional(Type.Integer({ minimum: 0, description: 'Created at or after this instant (Unix ms)' })),
  createdTo: Type.Optional(Type.Integer({ minimum: 0, description: 'Created at or before this instant (Unix ms)' })),
  ignore: Type.Optional(Type.Boolean({ description: 'Include leads in `ignore` statuses (lists `all` and `/leads`); default false' })),
  id: repeated('Lead ids (integers).'),
};

const LIST_NOTE =
  'Answers a bare array, newest last message first (ties: newest lead first), with the total in the `X-Total-Count` header. ' +
  'A manager sees only the leads the visibility rules give them (docs/api/auth.md, "Which leads a manager sees"). Unknown query parameters are ignored.';

const LISTS: Array<{ list: Exclude<LeadList, 'leads'>; summary: string }> = [
  { list: 'inbox', summary: 'Inbox: new leads (no status)' },
  { list: 'active', summary: 'Active leads (statuses of type active)' },
  { list: 'completed', summary: 'Archived leads (statuses of types completed and failed)' },
  { list: 'all', summary: 'All leads except those in ignore statuses (with `ignore=true` on v1.3: all)' },
];

/**
 * List routes of one group of versions: v1.1 and v1.2 take the common parameters, v1.3 also the
 * filters of docs/api/leads.md (a route-table difference, not a handler one).
 */
function listRoutes(versions: readonly ApiVersion[], extended: boolean): RouteDef[] {
  const query = (version: ApiVersion, withStatuses: boolean) =>
    Type.Object({ ...baseQuery(version, withStatuses), ...(extended ? extendedQuery : {}) });
  return [
    ...LISTS.map(({ list, summary }) =>
      defineRoute({
        versions,
        method: 'GET',
        url: `/leads/${list}`,
        schema: (version) => ({
          tags,
          summary,
          description: LIST_NOTE,
          querystring: query(version, list !== 'inbox'),
          response: {
            200: withTotalCount(
              Type.Array(extended ? LeadListItemV13Object : LeadListItemObject),
              'Leads matching the list and filters, all pages',
            ),
          },
        }),
        handler: async (req, reply, { services, auth, traits }) => {
          const q = parseLeadQuery(req.query as Record<string, unknown>, { list, extended, clampLimit: traits.clampLimit });
          const result = await services.leads.list(auth, list, q);
          reply.header('x-total-count', String(result.total));
          return result.entries.map(serializeLeadListItem);
        },
      }),
    ),
    defineRoute({
      versions,
      method: 'GET',
      url: '/leads/funnel',
      schema: (version) => ({
        tags,
        summary: 'Funnel: every status except ignore ones, each with a page of its leads',
        description:
          'Statuses of types active, completed and failed in list order (type, then order); with `statuses`, only those. ' +
          '`offset` and `limit` apply to each status separately; every filter applies to the leads. ' +
          'Inbox leads (no status) are not part of the funnel. `X-Total-Count`: the leads of all listed statuses.',
        querystring: query(version, true),
        response: { 200: withTotalCount(Type.Array(FunnelColumnObject), 'Leads of all listed statuses, all pages') },
      }),
      handler: async (req, reply, { services, auth, traits }) => {
        const q = parseLeadQuery(req.query as Record<string, unknown>, { list: 'funnel', extended, clampLimit: traits.clampLimit });
        const result = await services.leads.funnel(auth, q);
        reply.header('x-total-count', String(result.total));
        return result.columns.map(serializeFunnelColumn);
      },
    }),
  ];
}

/** A list answer that also sets `X-Total-Count`: the header is part of the documented response. */
function withTotalCount<T extends TSchema>(schema: T, what: string): T {
  return { ...schema, headers: { 'X-Total-Count': { type: 'integer', minimum: 0, description: what } } };
}

const text = (max: number, description?: string) => Type.Optional(Type.String({ maxLength: max, description }));

/** The editable fields of PUT /leads/<id> (docs/api/leads.md "One lead"). */
const leadFields = {
  statusId: Type.Optional(
    Nullable(Type.Integer({ minimum: 1, description: 'A status of the account; null moves the lead back to the inbox' })),
  ),
  details: text(FIELD_LIMITS.details, 'Comment'),
  amount: Type.Optional(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
  userId: Type.Optional(Nullable(Type.Integer({ minimum: 1, description: 'An employee of the account; null unassigns' }))),
  address: text(FIELD_LIMITS.address),
  ttn: text(FIELD_LIMITS.ttn, 'Consignment note number'),
  customData: text(FIELD_LIMITS.customData, 'Free data of the integrator'),
  customFields: Type.Optional(
    Type.Record(Type.String(), Type.Unknown({ description: 'A string, a number, or {value: string|number, title: string}' }), {
      maxProperties: FIELD_LIMITS.customFieldKeys,
      description:
        'Object of fields: each value a string or number, or `{value, title}`. Stored as written and answered as its JSON text. Replaces the previous object.',
    }),
  ),
  paymentTypeId: Type.Optional(Nullable(Type.Integer({ minimum: 1, description: 'A payment type of the account; null clears it' }))),
  items: Type.Optional(
    Type.Array(
      Type.Object(
        { title: Type.String({ maxLength: FIELD_LIMITS.itemTitle }), count: Type.Integer() },
        { additionalProperties: true, description: 'Goods item: `title` and `count` required; other fields (id, link, ...) kept as given' },
      ),
      { maxItems: FIELD_LIMITS.items, description: 'Replaces the previous items' },
    ),
  ),
};

const CHANGE_NOTE =
  'Answers the lead (single-lead shape). Records `lead.changed` with the names of the changed fields when anything changed, ' +
  'and also `lead.changed.status` (with `statusId` and `previousStatusId`) when the status changed; nothing when nothing changed.';

export const leadsRoutes: RouteDef[] = [
  ...listRoutes(['v1.1', 'v1.2'], false),
  ...listRoutes(V13, true),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/leads',
    schema: (version) => ({
      tags,
      summary: 'Leads by id or by any filter: GET /v1.3/leads?id=1&id=2',
      description:
        `${LIST_NOTE} Covers every list like \`all\`; leads in ignore statuses are included with \`ignore=true\`, ` +
        'and when asked for by `id` (unless `ignore=false`).',
      querystring: Type.Object({ ...baseQuery(version, true), ...extendedQuery }),
      response: { 200: withTotalCount(Type.Array(LeadListItemV13Object), 'Leads matching the list and filters, all pages') },
    }),
    handler: async (req, reply, { services, auth, traits }) => {
      const q = parseLeadQuery(req.query as Record<string, unknown>, { list: 'leads', extended: true, clampLimit: traits.clampLimit });
      const result = await services.leads.list(auth, 'leads', q);
      reply.header('x-total-count', String(result.total));
      return result.entries.map(serializeLeadListItem);
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/leads/statistics',
    schema: (version) => {
      const { offset: _o, limit: _l, ...filters } = baseQuery(version, true);
      return {
        tags,
        summary: 'Lead statistics: counts per list and per status, new leads per day, median response time',
        description:
          'Every filter of the lists applies. `lists` and `statuses` count leads of every status type (ignore ones under `lists.ignore`); ' +
          '`newLeads` (per UTC day of creation), `responseTime` and, with `breakdowns=true`, `employees` and `channels` cover the `all` list (ignore statuses only with `ignore=true`). ' +
          "With `amounts=true`, `amounts` and each status's `amount` sum the amounts of the leads `lists` and `statuses` count.",
        querystring: Type.Object({
          ...filters,
          ...extendedQuery,
          breakdowns: Type.Optional(
            Type.Boolean({
              description:
                'Also answer `employees` and `channels` (reads every matching lead: meant for reports, not for list counts); default false',
            }),
          ),
          amounts: Type.Optional(
            Type.Boolean({
              description:
                "Also answer `amounts` (per list) and `amount` on each status: the exact sums of the leads' amounts as decimal strings, as the funnel board totals its columns (v1.3 extension); default false",
            }),
          ),
          responseTimeIn: Type.Optional(
            Type.Union([Type.Literal('calendar'), Type.Literal('working')], {
              description:
                "How `responseTime` (median, `withinTarget`, the breakdowns' medians) counts each lead's wait: `calendar` (the default) all of it, " +
                "`working` only the part within the account's working hours (the same figure when the account has none; docs/api/automation.md)",
            }),
          ),
        }),
        response: { 200: LeadStatisticsObject },
      };
    },
    handler: async (req, _reply, { services, auth }) => {
      const filters = parseLeadFilters(req.query as Record<string, unknown>, { list: 'statistics', extended: true });
      const { breakdowns, amounts, responseTimeIn } = req.query as {
        breakdowns?: boolean;
        amounts?: boolean;
        responseTimeIn?: 'calendar' | 'working';
      };
      return serializeStatistics(
        await services.leads.statistics(auth, filters, {
          breakdowns: breakdowns === true,
          amounts: amounts === true,
          workingTime: responseTimeIn === 'working',
        }),
      );
    },
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/leads',
    schema: {
      tags,
      summary: 'Create a lead for a customer on an integration (an existing customer, or a new one)',
      description:
        'Give `saId` (an integration the caller may use) and exactly one of `customerId` (an existing customer the caller can see) ' +
        'or `customer` `{name, phone?, email?, address?}` (created, with `customer.created`). The lead has no messages; it goes to the inbox ' +
        'unless `statusId` is given. `userId` absent: the calling manager, or nobody when the owner creates it. ' +
        'Unknown references -> 400. Answers the lead (single-lead shape) and records `lead.created`.',
      body: Type.Object({
        saId: Id,
        customerId: Type.Optional(Id),
        customer: Type.Optional(
          Type.Object({
            name: Type.String({ minLength: 1, maxLength: 200 }),
            phone: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
            email: Type.Optional(Nullable(Type.String({ maxLength: 254 }))),
            address: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
          }),
        ),
        ...leadFields,
      }),
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeLead(await services.leads.create(auth, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/leads/:id',
    schema: {
      tags,
      summary: 'One lead (single-lead shape: customerId and timestamp, no nested objects)',
      params: IdParams,
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeLead(await services.leads.get(auth, req.params.id)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/leads/:id',
    optionalBody: true,
    schema: {
      tags,
      summary: 'Change the given fields of a lead',
      description:
        `Only the fields given change. \`statusId\` moves the lead (null: back to the inbox); \`statusId\`, \`userId\` and ` +
        `\`paymentTypeId\` must exist in the account (else 400, nothing changes). ${CHANGE_NOTE}`,
      params: IdParams,
      body: Type.Object(leadFields),
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeLead(await services.leads.update(auth, req.params.id, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/leads/:id/read',
    optionalBody: true,
    schema: {
      tags,
      summary: 'Mark incoming messages read: those of the listed channels, or all',
      description:
        '`sources`: channels by channel `type` and integration `saId`; their unread incoming messages become read. ' +
        `With no body, \`{}\` or an empty \`sources\`, every message of the lead becomes read. ${CHANGE_NOTE} (\`read\` is the field that changes.)`,
      params: IdParams,
      body: Type.Object({
        sources: Type.Optional(
          Type.Array(Type.Object({ type: Type.String({ maxLength: 32 }), saId: Type.Integer({ minimum: 0 }) }), { maxItems: 100 }),
        ),
      }),
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializeLead(await services.leads.markRead(auth, req.params.id, req.body?.sources)),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/leads/:id/unread',
    optionalBody: true,
    schema: {
      tags,
      summary: 'Mark a lead unread again (v1.3 extension): its latest incoming message becomes unread',
      description: `A lead without incoming messages stays as it is. ${CHANGE_NOTE} (\`read\` is the field that changes.)`,
      params: IdParams,
      body: Type.Object({}),
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeLead(await services.leads.markUnread(auth, req.params.id)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/leads/:id/accept',
    schema: {
      tags,
      summary: 'Accept a lead: assign the employee (and move an inbox lead to the first active status)',
      description:
        '`userId` (or `userID`, as older clients write it) is any employee of the account, whoever asks: managers may accept the leads they see, ' +
        'for themselves or a colleague. A lead in the inbox also moves to the first active status (lowest order); a lead already in a status keeps it. ' +
        CHANGE_NOTE,
      params: IdParams,
      body: Type.Object({
        userId: Type.Optional(Type.Integer({ minimum: 1 })),
        userID: Type.Optional(Type.Integer({ minimum: 1, description: 'Same as userId' })),
      }),
      response: { 200: LeadObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeLead(await services.leads.accept(auth, req.params.id, req.body)),
  }),
];
