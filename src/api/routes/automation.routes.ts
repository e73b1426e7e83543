import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';

const tags = ['automation'];

const Distribution = Type.Object(
  {
    mode: Type.Union([Type.Literal('off'), Type.Literal('round_robin'), Type.Literal('least_busy')]),
    employees: Type.Optional(Type.Array(Id, { maxItems: 1000, description: 'absent: every confirmed employee reaching the integration' })),
    onlyAvailable: Type.Optional(Type.Boolean({ description: 'skip employees who are away (default true)' })),
  },
  { additionalProperties: false },
);

const Time = Type.String({ pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$', description: 'HH:MM, 00:00 to 24:00' });
const Range = Type.Array(Time, { minItems: 2, maxItems: 2, description: '[from, to]' });
const Ranges = Type.Optional(Type.Array(Range, { maxItems: 10 }));
const WorkingHours = Type.Object(
  {
    timezone: Type.String({ maxLength: 64, description: 'IANA time zone name, such as Europe/Berlin' }),
    week: Type.Object(
      { mon: Ranges, tue: Ranges, wed: Ranges, thu: Ranges, fri: Ranges, sat: Ranges, sun: Ranges },
      {
        propertyNames: { enum: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] },
        description: 'a day missing is closed; an empty week is closed all week',
      },
    ),
    holidays: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' }), { maxItems: 366 })),
  },
  { additionalProperties: false },
);

const FirstResponseTarget = Type.Object(
  {
    minutes: Type.Union([Type.Integer({ minimum: 1, maximum: 43_200 }), Type.Null()], {
      description: 'minutes a customer may wait for an answer (1 to 43200, 30 days); null: no target',
    }),
  },
  // An unknown key is refused by name: `additionalProperties: false` alone would drop it silently (api/validation.ts).
  { additionalProperties: false, propertyNames: { enum: ['minutes'] } },
);

const Rule = Type.Object({
  id: Id,
  name: Type.String(),
  enabled: Type.Boolean(),
  event: Type.String(),
  idleMinutes: Type.Optional(Type.Integer()),
  conditions: Type.Array(Type.Object({ field: Type.String(), op: Type.String(), value: Type.Unknown() })),
  actions: Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true })),
  order: Type.Integer(),
});

const RuleBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  enabled: Type.Optional(Type.Boolean()),
  event: Type.String({ maxLength: 64, description: 'message.incoming, lead.created, lead.changed.status or lead.idle' }),
  idleMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600, description: 'lead.idle: minutes without a customer message' })),
  conditions: Type.Optional(
    Type.Array(Type.Object({ field: Type.String({ maxLength: 64 }), op: Type.String({ maxLength: 16 }), value: Type.Unknown() }), {
      maxItems: 20,
    }),
  ),
  actions: Type.Array(Type.Object({ type: Type.String({ maxLength: 32 }) }, { additionalProperties: true }), { minItems: 1, maxItems: 20 }),
  order: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
});

const Runs = Type.Object({
  runs: Type.Array(
    Type.Object({
      eventId: Id,
      leadId: Type.Union([Id, Type.Null()]),
      at: Type.Integer({ description: 'Unix milliseconds' }),
      actions: Type.Array(Type.Object({ type: Type.String(), ok: Type.Boolean(), error: Type.Optional(Type.String()) })),
    }),
  ),
});

/** Automation of the account (docs/api/automation.md): owner only. */
export const automationRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/integrations/:id/distribution',
    ownerOnly: true,
    schema: {
      tags,
      summary: "How the integration's new leads are shared among employees (owner only)",
      params: IdParams,
      response: { 200: Distribution },
    },
    handler: async (req, _reply, { services, auth }) => services.distribution.get(auth, req.params.id),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/integrations/:id/distribution',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Set how the integration's new leads are shared among employees (owner only)",
      description:
        '`round_robin` takes the employees in turn; `least_busy` the one with the fewest open leads (inbox and active statuses), ties in turn. ' +
        'A listed employee who is not a confirmed employee reaching the integration -> 400 and nothing changes.',
      params: IdParams,
      body: Distribution,
      response: { 200: Distribution },
    },
    handler: async (req, _reply, { services, auth }) => services.distribution.put(auth, req.params.id, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/working-hours',
    ownerOnly: true,
    schema: {
      tags,
      summary: "The account's working hours (owner only); without any set, open around the clock",
      response: { 200: WorkingHours },
    },
    handler: async (_req, _reply, { services, auth }) => services.accountAutomation.workingHours(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/account/working-hours',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Set the account's working hours (owner only)",
      description:
        'Ranges are local times in `timezone`, each ending after it starts (24:00 ends the day); holidays are local dates closed all day. ' +
        'An unknown time zone, a time such as 25:00 or a range ending before it starts -> 400 naming it, nothing stored.',
      body: WorkingHours,
      response: { 200: WorkingHours },
    },
    handler: async (req, _reply, { services, auth }) => services.accountAutomation.setWorkingHours(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/account/first-response-target',
    schema: {
      tags,
      summary: "The account's first-response target (every employee may read it)",
      response: { 200: FirstResponseTarget },
    },
    handler: async (_req, _reply, { services, auth }) => services.accountAutomation.firstResponseTarget(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/account/first-response-target',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Set the account's first-response target in minutes, or null for none (owner only)",
      description:
        'A lead whose customer has waited longer for an answer is overdue: the `overdue` filter of the v1.3 lead lists finds it, and its ' +
        'responsible employee (the owner when unassigned) is notified once on the realtime stream.',
      body: FirstResponseTarget,
      response: { 200: FirstResponseTarget },
    },
    handler: async (req, _reply, { services, auth }) => services.accountAutomation.setFirstResponseTarget(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/automation/rules',
    ownerOnly: true,
    schema: { tags, summary: "The account's automation rules in their order (owner only)", response: { 200: Type.Array(Rule) } },
    handler: async (_req, _reply, { services, auth }) => services.rules.list(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/automation/rules',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Create a rule (owner only; at most 100 per account)',
      description:
        'Unknown event, field, op or action, a value of the wrong type, a status or employee not of this account, a regular expression over 200 characters ' +
        'or with nested repetition -> 400 with the path of the bad part, nothing stored.',
      body: RuleBody,
      response: { 200: Rule },
    },
    handler: async (req, _reply, { services, auth }) => services.rules.create(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/automation/rules/:id',
    ownerOnly: true,
    schema: { tags, summary: 'One rule (owner only)', params: IdParams, response: { 200: Rule } },
    handler: async (req, _reply, { services, auth }) => services.rules.get(auth, req.params.id),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/automation/rules/:id',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Replace a rule (owner only; the same checks as creation)',
      params: IdParams,
      body: RuleBody,
      response: { 200: Rule },
    },
    handler: async (req, _reply, { services, auth }) => services.rules.update(auth, req.params.id, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/automation/rules/:id',
    ownerOnly: true,
    schema: { tags, summary: 'Delete a rule and its runs (owner only)', params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.rules.remove(auth, req.params.id);
      return {};
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/automation/rules/:id/runs',
    ownerOnly: true,
    schema: { tags, summary: "The rule's latest runs, newest first (owner only)", params: IdParams, response: { 200: Runs } },
    handler: async (req, _reply, { services, auth }) => ({ runs: await services.rules.runs(auth, req.params.id) }),
  }),
];
