import { Type, type TSchema } from 'typebox';
import type { Employee } from '../../domain/employees/employees.types.js';
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

const EmployeeExtras = {
  allowedUsers: Type.Union([Type.Array(Id), Type.Null()], { description: 'employees whose leads this one may access' }),
  metadata: Type.Object({}, { additionalProperties: true }),
  available: Type.Boolean({ description: 'Available / Away: distribution skips employees who are away' }),
};

/** v1.3 employee objects carry `allowedUsers`, `metadata` and `available`; v1.1 and v1.2 do not (docs/api/versions.md). */
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
  return traits.employeeExtras ? { ...base, allowedUsers: e.allowedUsers, metadata: e.metadata, available: e.available } : base;
}
