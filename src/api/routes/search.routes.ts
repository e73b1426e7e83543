import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { Id } from '../schemas/common.js';
import { MAX_QUERY_LENGTH } from '../../domain/search/search.service.js';
import {
  serializeMessageHits,
  messageSearchResponse,
  customerSearchResponse,
  customerSearchBody,
} from '../serializers/search.serializer.js';

const Q = Type.String({
  minLength: 1,
  maxLength: MAX_QUERY_LENGTH + 64,
  description: 'Words to find (word prefixes, all required); at most 200 characters once trimmed',
});
const Cursor = Type.Union([Type.Integer(), Type.String({ maxLength: 32 })]);

export const searchRoutes = [
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/search/customers',
    schema: (version) => ({
      tags: ['search'],
      summary: 'Find leads by their customer',
      description:
        'Leads (list-item shape) whose customer matches every word of `q` as a prefix of its name, login or e-mail, or whose phone digits start with the digits of `q` (formatting ignored, with or without the country code). Newest lead first, pages of 20; send `cursor` back for the next page; -1 at the end. `leads` on v1.3, `deals` on v1.1 and v1.2. A manager finds only leads it can see.',
      body: Type.Object({ q: Q, cursor: Type.Optional(Cursor) }),
      response: { 200: customerSearchResponse(version) },
    }),
    handler: async (req, _reply, { services, auth, traits }) => {
      const result = await services.search.customers(auth, req.body.q, req.body.cursor);
      return customerSearchBody(result.cursor, result.leads, traits);
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/search/:integrationId',
    schema: (version) => ({
      tags: ['search'],
      summary: 'Search message texts of one integration',
      description:
        'Full-text search, case- and accent-insensitive, every word as a prefix, newest first. One cursor per channel group the integration has (`message`, `comment`), each paging independently in pages of 20; -1 when a group is exhausted. A manager finds only messages of leads it can see.',
      params: Type.Object({ integrationId: Id }),
      body: Type.Object({
        q: Q,
        cursors: Type.Optional(Type.Array(Type.Object({ type: Type.String({ maxLength: 16 }), cursor: Cursor }), { maxItems: 4 })),
      }),
      response: { 200: messageSearchResponse(version) },
    }),
    handler: async (req, _reply, { services, auth, traits }) => {
      const result = await services.search.messages(auth, req.params.integrationId, req.body.q, req.body.cursors);
      return { cursors: result.cursors, messages: serializeMessageHits(result.hits, traits) };
    },
  }),
];
