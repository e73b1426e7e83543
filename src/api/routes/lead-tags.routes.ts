import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { Id } from '../schemas/common.js';

const params = Type.Object({
  id: Id,
  tag: Type.String({ minLength: 1, maxLength: 100, description: 'Tag value, URL-encoded; surrounding spaces are dropped' }),
});
const response = { 200: Type.Array(Type.String(), { description: "The lead's tags, sorted without case" }) };
const NOTE =
  "Idempotent: answers 200 with the lead's tags either way. When the lead's tags really change, `lead.changed` is recorded " +
  'with `changes: ["tags"]`.';

/** Tags on leads (docs/api/leads.md). The account's tag list is in tags.routes.ts. */
export const leadTagsRoutes = [
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/tags/:id/:tag',
    optionalBody: true,
    schema: {
      tags: ['tags'],
      summary: 'Add a tag to a lead (the tag is created on first use)',
      description: NOTE,
      params,
      response,
    },
    handler: async (req, _reply, { services, auth }) => services.leads.addTag(auth, req.params.id, req.params.tag),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/tags/:id/:tag',
    schema: {
      tags: ['tags'],
      summary: "Remove a tag from a lead (the tag stays in the account's list)",
      description: NOTE,
      params,
      response,
    },
    handler: async (req, _reply, { services, auth }) => services.leads.removeTag(auth, req.params.id, req.params.tag),
  }),
];
