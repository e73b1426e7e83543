import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { serializeTag, TagObject } from '../serializers/tags.serializer.js';

export const tagsRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/tags',
    schema: {
      tags: ['tags'],
      summary: 'List tags; with `search`, those starting with it, without case',
      description: 'Sorted by tag without case. Without `search` (or with a blank one) every tag of the account is listed.',
      querystring: Type.Object({ search: Type.Optional(Type.String({ maxLength: 100, description: 'Prefix, any case' })) }),
      response: { 200: Type.Array(TagObject) },
    },
    handler: async (req, _reply, { services, auth }) => (await services.tags.search(auth, req.query.search)).map(serializeTag),
  }),
];
