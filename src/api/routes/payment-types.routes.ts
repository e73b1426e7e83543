import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { Empty, IdParams } from '../schemas/common.js';
import { PaymentTypeObject, serializePaymentType } from '../serializers/payment-types.serializer.js';

const Title = Type.String({ minLength: 1, maxLength: 200 });
const tags = ['payment-types'];

export const paymentTypesRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/payment-types',
    schema: { tags, summary: 'List payment types, in creation order', response: { 200: Type.Array(PaymentTypeObject) } },
    handler: async (_req, _reply, { services, auth }) => (await services.paymentTypes.list(auth)).map(serializePaymentType),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/payment-types',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Create a payment type (owner only); answers it',
      description: 'Titles are unique in the account: a title another payment type has answers 409.',
      body: Type.Object({ title: Title }),
      response: { 200: PaymentTypeObject },
    },
    handler: async (req, _reply, { services, auth }) => serializePaymentType(await services.paymentTypes.create(auth, req.body.title)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/payment-types/:id',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Rename a payment type (owner only); answers it',
      params: IdParams,
      body: Type.Object({ title: Title }),
      response: { 200: PaymentTypeObject },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializePaymentType(await services.paymentTypes.update(auth, req.params.id, req.body.title)),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/payment-types/:id',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Delete a payment type (owner only); answers {}',
      description: 'Leads that carried it are left without a payment type (paymentTypeId null).',
      params: IdParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.paymentTypes.remove(auth, req.params.id);
      return {};
    },
  }),
];
