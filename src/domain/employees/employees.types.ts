import type { Locale, Role } from '../users/users.types.js';

/** An integration access record as written: `saId` null alone means "no integration". */
export interface SourceInput {
  /** An existing access record of the employee, kept (with its id) and pointed at `saId`. */
  id?: number;
  saId: number | null;
}

export interface NewEmployeeInput {
  login: string;
  /** Empty or absent: all integrations; one record with saId null: none (docs/api/resources.md). */
  sources?: SourceInput[];
  allowAllDeals?: boolean;
  /** The invitee's language (the invitation e-mail's too); absent: the inviter's. */
  locale?: Locale;
}

export interface EmployeeUpdate {
  /** Absent: unchanged. Otherwise replaces the access records. */
  sources?: SourceInput[];
  allowAllDeals?: boolean;
  /** An employee may set its own; another's is the owner's to set. */
  locale?: Locale;
  /** v1.3: the "Available / Away" switch (the employee itself may change it). */
  available?: boolean;
}

export interface InvitationAcceptance {
  token: string;
  pass: string;
  name: string;
}

/** The version-neutral employee (the v1.3 shape); serializers drop what older versions lack. */
export interface Employee {
  id: number;
  name: string | null;
  login: string;
  role: Role;
  confirmed: boolean;
  allowAllDeals: boolean;
  sources: Array<{ id: number; saId: number | null }>;
  allowedUsers: number[] | null;
  metadata: Record<string, unknown>;
  /** null until chosen. */
  locale: Locale | null;
  /** Distribution skips employees who are away. */
  available: boolean;
}
