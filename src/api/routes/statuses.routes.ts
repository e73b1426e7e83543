import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { serializeStatus, StatusObject } from '../serializers/statuses.serializer.js';
import { STATUS_TYPES } from '../../domain/statuses/statuses.types.js';

const StatusType = Type.Enum([...STATUS_TYPES], { description: 'active, completed, failed or ignore' });
const Name = Type.String({ minLength: 1, maxLength: 100 });
const Order = Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'Position within the type' });
/** Safe to put in a style attribute: a hex color, a CSS color name, or empty. */
const Color = Type.String({
  maxLength: 30,
  pattern: '^(#([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]{1,30})?$',
  description: '#rgb, #rgba, #rrggbb, #rrggbbaa, a CSS color name, or empty',
});
const tags = ['statuses'];

export const statusesRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/statuses',
    schema: {
      tags,
      summary: 'List lead statuses, by type (active, completed, failed, ignore), then order',
      response: { 200: Type.Array(StatusObject) },
    },
    handler: async (_req, _reply, { services, auth }) => (await services.statuses.list(auth)).map(serializeStatus),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/statuses',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Create a status (owner only); answers the created status',
      description:
        'Names are unique within a type (409 otherwise). Without `order` the status goes after the last of its type; ' +
        "without `color` it gets its type's default color.",
      body: Type.Object({ name: Name, type: StatusType, order: Type.Optional(Order), color: Type.Optional(Color) }),
      response: { 200: StatusObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeStatus(await services.statuses.create(auth, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/statuses/reorder',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Set the order of statuses of one type (owner only); answers every status of that type, sorted',
      description:
        'Every id must be a status of the account, listed once, and all of one type; otherwise 400 and nothing changes. ' +
        'Statuses of the type that are not listed keep their order.',
      body: Type.Array(Type.Object({ id: Id, order: Order }), { minItems: 1, maxItems: 200 }),
      response: { 200: Type.Array(StatusObject) },
    },
    handler: async (req, _reply, { services, auth }) => (await services.statuses.reorder(auth, req.body)).map(serializeStatus),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/statuses/:id',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Rename or recolor a status (owner only); answers the status',
      description:
        "Only `name` and `color` change. A `type` different from the status's own answers 409 (a status never changes " +
        'type: delete it and create another); the same type is accepted. `order` is ignored (use /statuses/reorder).',
      params: IdParams,
      body: Type.Object({ name: Type.Optional(Name), color: Type.Optional(Color), type: Type.Optional(StatusType) }),
      response: { 200: StatusObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeStatus(await services.statuses.update(auth, req.params.id, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/statuses/:id',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Delete a status (owner only); answers {}',
      description: 'Its leads move to the first remaining status of the same type (lowest order), or to the inbox when none remains.',
      params: IdParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.statuses.remove(auth, req.params.id);
      return {};
    },
  }),
];
