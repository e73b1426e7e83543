import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Id, IdParams } from '../schemas/common.js';

const tags = ['automation'];

const Distribution = Type.Object(
  {
    mode: Type.Union([Type.Literal('off'), Type.Literal('round_robin'), Type.Literal('least_busy')]),
    employees: Type.Optional(Type.Array(Id, { maxItems: 1000, description: 'absent: every confirmed employee reaching the integration' })),
    onlyAvailable: Type.Optional(Type.Boolean({ description: 'skip employees who are away (default true)' })),
  },
  { additionalProperties: false },
);

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
];
