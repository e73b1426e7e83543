import { Type, type TSchema } from 'typebox';
import type { Employee } from '../../domain/employees/employees.types.js';
import { LOCALES, type Locale } from '../../domain/users/users.types.js';
import { Id } from '../schemas/common.js';
import type { VersionTraits } from '../versions.js';

const EmployeeBase = {
  id: Id,
  name: Type.Union([Type.String(), Type.Null()], { description: 'null until the invitation is accepted' }),
  login: Type.String({ description: 'e-mail' }),
  role: Type.Union([Type.Literal('owner'), Type.Literal('manager')]),
  confirmed: Type.Boolean(),
  allowAllDeals: Type.Boolean(),
  sources: Type.Array(Type.Object({ id: Id, saId: Type.Union([Id, Type.Null()]) }), {
    description: 'integration access records; empty = all integrations, one with saId null = none',
  }),
};

/** A language Parley speaks to employees (v1.3 extension). */
export const LocaleSchema = Type.Unsafe<Locale>({ type: 'string', enum: [...LOCALES], description: LOCALES.join(' or ') });
/** The stored choice as answered: null until chosen, when the app follows the browser. */
export const ChosenLocale = (description: string) =>
  Type.Unsafe<Locale | null>({ type: ['string', 'null'], enum: [...LOCALES, null], description });

const EmployeeExtras = {
  allowedUsers: Type.Union([Type.Array(Id), Type.Null()], { description: 'employees whose leads this one may access' }),
  metadata: Type.Object({}, { additionalProperties: true }),
  locale: ChosenLocale('the language of the agent app and e-mails (Parley extension); null until chosen, when the app follows the browser'),
  available: Type.Boolean({ description: 'Available / Away: distribution skips employees who are away' }),
};

/** v1.3 employee objects carry `allowedUsers`, `metadata`, `locale` and `available`; v1.1 and v1.2 do not (docs/api/versions.md). */
export function employeeSchema(traits: VersionTraits): TSchema {
  return traits.employeeExtras
    ? Type.Object({ ...EmployeeBase, ...EmployeeExtras }, { title: 'Employee', description: 'Employee' })
    : Type.Object(EmployeeBase, { title: 'EmployeeV12', description: 'Employee (v1.1, v1.2)' });
}

export function serializeEmployee(e: Employee, traits: VersionTraits) {
  const base = {
    id: e.id,
    name: e.name,
    login: e.login,
    role: e.role,
    confirmed: e.confirmed,
    allowAllDeals: e.allowAllDeals,
    sources: e.sources,
  };
  return traits.employeeExtras
    ? { ...base, allowedUsers: e.allowedUsers, metadata: e.metadata, locale: e.locale, available: e.available }
    : base;
}
