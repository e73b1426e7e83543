import type { CustomerRow, ProfileRow } from '../../db/schema.js';
import { invalid, type ErrorDetail } from '../errors.js';
import { normalizePhone } from './phone.js';

/** A customer's profile (docs/api/resources.md "Customer"). */
export interface ProfileView {
  id: number;
  login: string;
  type: string;
  socialId: string;
  profileUrl: string;
}

/** The Customer (docs/api/resources.md), the same on every version; also the `customer` of customer events. */
export interface CustomerView {
  id: number;
  login: string;
  name: string;
  avatar: string;
  email: string | null;
  phone: string | null;
  address: string | null;
  profiles: ProfileView[];
}

export function customerView(customer: CustomerRow, profiles: ProfileRow[]): CustomerView {
  return {
    id: customer.id,
    login: customer.login,
    name: customer.name,
    avatar: customer.avatar,
    email: customer.email,
    phone: customer.phone,
    address: customer.address,
    profiles: profiles.map((p) => ({ id: p.id, login: p.login, type: p.type, socialId: p.social_id, profileUrl: p.profile_url })),
  };
}

/** `PUT /customers/<id>`: only these fields; absent = unchanged; null or "" clears email, phone, address. */
export interface CustomerPatchInput {
  name?: string;
  email?: string | null;
  phone?: string | null;
  address?: string | null;
}

export type CustomerPatch = Partial<Pick<CustomerRow, 'name' | 'email' | 'phone' | 'phone_as_typed' | 'address'>>;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** International digits with an optional leading + (E.164 allows at most 15 digits). */
const PHONE = /^\+?[0-9]{5,15}$/;
/** Separators people type inside phone numbers; dropped before the check, so stored numbers are bare. */
const PHONE_SEPARATORS = /[\s\-().]/g;

/**
 * Checks and normalizes a patch: e-mail trimmed and checked, phone checked and stored in E.164 read
 * in `country` (phone.ts; as typed, without separators, when it does not parse), empty strings
 * cleared to null. Every invalid field is reported at once.
 */
export function normalizeCustomerPatch(input: CustomerPatchInput, country: string): CustomerPatch {
  const patch: CustomerPatch = {};
  const details: ErrorDetail[] = [];
  if (input.name !== undefined) patch.name = input.name.trim();
  if (input.email !== undefined) {
    const email = input.email?.trim() || null;
    if (email !== null && !EMAIL.test(email)) details.push({ path: 'body.email', message: 'must be an e-mail address' });
    patch.email = email;
  }
  if (input.phone !== undefined) {
    const phone = input.phone?.replace(PHONE_SEPARATORS, '') || null;
    if (phone !== null && !PHONE.test(phone)) {
      details.push({ path: 'body.phone', message: 'must be an international number: 5 to 15 digits, optionally after +' });
    }
    patch.phone = phone === null ? null : storedPhone(phone, input.phone ?? '', country);
    patch.phone_as_typed = phone === null ? null : (input.phone ?? '').trim();
  }
  if (input.address !== undefined) patch.address = input.address?.trim() || null;
  if (details.length) throw invalid(`Invalid request: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details);
  return patch;
}

/** `bare` (a phone without separators) in E.164, or as it is when it does not parse. */
function storedPhone(bare: string, typed: string, country: string): string {
  const p = normalizePhone(typed, country);
  return p.parsed ? p.phone : bare;
}

/** The fields of `patch` whose value differs from the row's. */
export function changedFields(customer: CustomerRow, patch: CustomerPatch): CustomerPatch {
  const changes: CustomerPatch = {};
  for (const key of Object.keys(patch) as Array<keyof CustomerPatch>) {
    if (patch[key] !== customer[key]) (changes as Record<string, unknown>)[key] = patch[key];
  }
  return changes;
}
