import { Type } from 'typebox';
import { ALL, V13, defineRoute } from '../route.js';
import { Id, IdParams, idsQuery } from '../schemas/common.js';
import { serializeCustomer } from '../serializers/customers.serializer.js';
import { MAX_VALUES, requiredIds } from '../../domain/leads/lead-filters.js';

const NullableString = (options: { maxLength: number; description?: string }) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...options });

const Profile = Type.Object(
  {
    id: Id,
    login: Type.String(),
    type: Type.String({ description: 'Type of the integration the customer wrote to' }),
    socialId: Type.String({ description: 'Customer id in the messenger or network' }),
    profileUrl: Type.String(),
  },
  { description: 'Customer profile' },
);

const Customer = Type.Object(
  {
    id: Id,
    login: Type.String(),
    name: Type.String(),
    avatar: Type.String(),
    email: Type.Union([Type.String(), Type.Null()]),
    phone: Type.Union([Type.String(), Type.Null()]),
    address: Type.Union([Type.String(), Type.Null()]),
    profiles: Type.Array(Profile, { description: 'Profiles on the integrations the caller may use' }),
  },
  { title: 'Customer', description: 'Customer' },
);

const CustomerPatch = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(NullableString({ maxLength: 254, description: 'E-mail address; null or "" clears it' })),
  phone: Type.Optional(
    NullableString({
      maxLength: 32,
      description:
        'International number, 5-15 digits with an optional leading +; spaces, dashes, dots and brackets are dropped; null or "" clears it',
    }),
  ),
  address: Type.Optional(NullableString({ maxLength: 1000, description: 'null or "" clears it' })),
});

const SamePhone = Type.Object(
  {
    customers: Type.Array(
      Type.Object({
        id: Id,
        name: Type.String(),
        phone: Type.String({ description: 'The shared phone as stored (E.164 when it parsed)' }),
      }),
      { description: 'Other customers of the account with the same phone that the caller may see, oldest first (at most 20)' },
    ),
  },
  { title: 'SamePhoneCustomers' },
);

const MergeBody = Type.Object({
  from: Type.Integer({
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'The customer merged into this one and deleted (its profiles, channels and leads move)',
  }),
});

const tags = ['customers'];
const customerIds = idsQuery('id', 'Customer ids');

export const customerRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/customers/:id',
    schema: { tags, summary: 'A customer with its profiles', params: IdParams, response: { 200: Customer } },
    handler: async (req, _reply, { services, auth }) => serializeCustomer(await services.customers.get(auth, req.params.id)),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/customers',
    schema: {
      tags,
      summary: `Several customers by id: GET /v1.3/customers?id=1&id=2 (at most ${MAX_VALUES})`,
      description:
        'Each customer the caller can see, as `GET /v1.3/customers/<id>` answers it, in the order asked; ids of customers it cannot see, ' +
        `or of none, are left out. ${customerIds.rule}`,
      querystring: customerIds.querystring,
      response: { 200: Type.Array(Customer) },
    },
    handler: async (req, _reply, { services, auth }) =>
      (await services.customers.getMany(auth, requiredIds(req.query as Record<string, unknown>, 'id'))).map(serializeCustomer),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/customers/:id',
    schema: {
      tags,
      summary: 'Change name, phone, e-mail or address (only the fields given)',
      params: IdParams,
      body: CustomerPatch,
      response: { 200: Customer },
    },
    handler: async (req, _reply, { services, auth }) => serializeCustomer(await services.customers.update(auth, req.params.id, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/customers/:id/update',
    optionalBody: true,
    schema: {
      tags,
      summary: 'Refresh the avatar (profile update) from the channels that can read profiles',
      params: IdParams,
      body: Type.Object({}),
      response: { 200: Customer },
    },
    handler: async (req, _reply, { services, auth }) => serializeCustomer(await services.customers.refresh(auth, req.params.id)),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/customers/:id/same-phone',
    schema: {
      tags,
      summary: 'Other customers with the same phone: whom the agent app offers to merge (never merged automatically)',
      params: IdParams,
      response: { 200: SamePhone },
    },
    handler: async (req, _reply, { services, auth }) => ({ customers: await services.customers.samePhone(auth, req.params.id) }),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/customers/:id/merge',
    schema: {
      tags,
      summary: 'Merge another customer into this one: its profiles, channels and leads move, empty fields are filled, it is deleted',
      params: IdParams,
      body: MergeBody,
      response: { 200: Customer },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializeCustomer(await services.customers.merge(auth, req.params.id, req.body.from)),
  }),
];
