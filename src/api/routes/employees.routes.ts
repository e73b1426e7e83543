import { type TProperties, Type } from 'typebox';
import type { EmployeeUpdate } from '../../domain/employees/employees.types.js';
import { ALL, defineRoute } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { employeeSchema, LocaleSchema, serializeEmployee } from '../serializers/employees.serializer.js';
import type { Locale } from '../../domain/users/users.types.js';
import { VERSION_TRAITS, type ApiVersion, type VersionTraits } from '../versions.js';

const SaId = Type.Union([Id, Type.Null()], { description: 'integration id; null (alone) = no integration' });
const MAX_SOURCES = 500;

const Sources = Type.Array(
  Type.Object({
    id: Type.Optional(Type.Integer({ minimum: 1, description: 'an existing access record to keep (PUT)' })),
    saId: SaId,
  }),
  { maxItems: MAX_SOURCES, description: 'empty array = all integrations; a single record with saId null = none' },
);

const Available = Type.Optional(Type.Boolean({ description: 'v1.3: Available / Away' }));

const employee = (version: ApiVersion) => employeeSchema(VERSION_TRAITS[version]);
/** `locale` is a v1.3 extension: older versions ignore it like any unknown field. */
const withLocale = <P extends TProperties>(version: ApiVersion, properties: P) =>
  VERSION_TRAITS[version].employeeExtras ? Type.Object({ ...properties, locale: Type.Optional(LocaleSchema) }) : Type.Object(properties);

/** The body without `locale` before v1.3, whatever a client sent. */
const v13Only = <B extends object>(body: B, traits: VersionTraits): B & { locale?: Locale } =>
  traits.employeeExtras ? body : { ...body, locale: undefined };

export const employeesRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/managers',
    schema: (version) => ({
      tags: ['employees'],
      summary: 'List the employees of the account (every employee may read it; changes are owner-only)',
      description: 'Managers may read the list too: the agent app needs names and ids to assign leads.',
      response: { 200: Type.Array(employee(version)) },
    }),
    handler: async (_req, _reply, { services, auth, traits }) =>
      (await services.employees.list(auth.accountId)).map((e) => serializeEmployee(e, traits)),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/managers',
    ownerOnly: true,
    schema: (version) => ({
      tags: ['employees'],
      summary: 'Invite an employee by e-mail (owner only); answers every employee of the account',
      description:
        'The employee is created unconfirmed (name null) and receives a one-time link by e-mail (or in the server log when SMTP is not configured); ' +
        'it confirms with POST /v1.3/auth/invitation. A login that exists anywhere on this installation -> 409; an unknown saId -> 400; ' +
        'the e-mail could not be sent -> 502 and nothing is created.',
      body: withLocale(version, {
        login: Type.String({ format: 'email', maxLength: 254 }),
        sources: Type.Optional(Sources),
        allowAllDeals: Type.Optional(Type.Boolean()),
      }),
      response: { 200: Type.Array(employee(version)) },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      (await services.employees.invite(auth, v13Only(req.body, traits))).map((e) => serializeEmployee(e, traits)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/managers/users-access/:id',
    ownerOnly: true,
    schema: (version) => ({
      tags: ['employees'],
      summary: 'Set whose leads the employee may access (owner only); the list replaces the previous one',
      description: "An empty array: no access to other employees' leads. Ids that are not employees of the account -> 400.",
      params: IdParams,
      body: Type.Object({ allowedUsers: Type.Array(Id, { maxItems: 1000 }) }),
      response: { 200: employee(version) },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      serializeEmployee(await services.employees.setAllowedUsers(auth, req.params.id, req.body.allowedUsers), traits),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/managers/:id',
    schema: (version) => ({
      tags: ['employees'],
      summary: 'Set the integrations an employee reaches and allowAllDeals (owner only), or a locale; answers the employee',
      description:
        '`sources` replaces the access records (absent: unchanged; `id` keeps an existing record). ' +
        'The owner always reaches everything: non-empty sources or allowAllDeals false for the owner -> 400. ' +
        'v1.3: an employee may set its own `locale` and `available` (Available / Away) without being the owner; anything else by a manager -> 403.',
      params: IdParams,
      body: withLocale(version, {
        sources: Type.Optional(Sources),
        allowAllDeals: Type.Optional(Type.Boolean()),
        ...(VERSION_TRAITS[version].employeeExtras ? { available: Available } : {}),
      }),
      response: { 200: employee(version) },
    }),
    handler: async (req, _reply, { services, auth, traits }) =>
      serializeEmployee(await services.employees.update(auth, req.params.id, v13Only(req.body, traits) as EmployeeUpdate), traits),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/managers/:id',
    ownerOnly: true,
    schema: {
      tags: ['employees'],
      summary: 'Remove an employee (owner only; the owner cannot be removed -> 400)',
      description: "The employee's leads are unassigned (without a status they return to the inbox) and its tokens stop working.",
      params: IdParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.employees.remove(auth, req.params.id);
      return {};
    },
  }),
];
