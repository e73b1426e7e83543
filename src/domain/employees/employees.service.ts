import crypto from 'node:crypto';
import type { UserRow } from '../../db/schema.js';
import type { Mailer } from '../../mail/mailer.js';
import { recordEvent } from '../../events/outbox.js';
import { findAccount } from '../accounts/accounts.repo.js';
import type { AuthService, TokenPair } from '../auth/auth.service.js';
import type { AuthContext } from '../auth/auth-context.js';
import { hashPassword } from '../auth/passwords.js';
import { sha256 } from '../auth/token-signer.js';
import { endUserSessions } from '../auth/tokens.repo.js';
import { announceSessionsEnded } from '../auth/sessions-signal.js';
import type { Deps } from '../context.js';
import { AppError, conflict, invalid, notFound, unauthorized, type ErrorDetail } from '../errors.js';
import { parseIdList, requireOwner } from '../policy/policy.js';
import { existingUserIds, findUser, findUserByLogin, insertUser, updateUser } from '../users/users.repo.js';
import { knownLocale, normalizeLogin } from '../users/users.types.js';
import { isUniqueViolation } from '../../db/errors.js';
import { presentLead } from '../leads/lead-presenter.js';
import {
  deleteUser,
  existingIntegrationIds,
  findInvitationByHash,
  forgetAllowedUser,
  insertInvitation,
  listSourceRecords,
  listUsers,
  markInvitationUsed,
  replaceSources,
  unassignLeads,
  type SourceRecord,
} from './employees.repo.js';
import type { Employee, EmployeeUpdate, InvitationAcceptance, NewEmployeeInput, SourceInput } from './employees.types.js';
import { invitationLink, invitationMail } from './invitation-mail.js';

const INVALID_INVITATION = 'Invalid, used or expired invitation';

/**
 * Employees of an account (docs/api/resources.md "Employee (manager)", docs/api/auth.md): listing, inviting, integration
 * access (`sources`), lead access (`allowAllDeals`, `allowedUsers`), removal, and the acceptance of
 * invitations. Reads are open to every employee; changes are the owner's.
 */
export class EmployeesService {
  constructor(
    private readonly deps: Deps,
    private readonly auth: AuthService,
    private readonly mailer: Mailer,
  ) {}

  async list(accountId: number): Promise<Employee[]> {
    const db = this.deps.db.kysely;
    const [users, records] = await Promise.all([listUsers(db, accountId), listSourceRecords(db, accountId)]);
    const byUser = new Map<number, SourceRecord[]>();
    for (const r of records) byUser.set(r.user_id, [...(byUser.get(r.user_id) ?? []), r]);
    return users.map((u) => toEmployee(u, byUser.get(u.id) ?? []));
  }

  async get(accountId: number, id: number): Promise<Employee> {
    const db = this.deps.db.kysely;
    const user = await findUser(db, accountId, id);
    if (!user) throw notFound('Employee not found');
    return toEmployee(user, await listSourceRecords(db, accountId, id));
  }

  /**
   * Creates an unconfirmed manager with its access records and a one-time invitation, then sends
   * the invitation. When the mail cannot be sent the employee is removed again (502): nothing is
   * left half-made, and the owner can simply retry. Answers every employee of the account.
   */
  async invite(auth: AuthContext, input: NewEmployeeInput): Promise<Employee[]> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    const login = normalizeLogin(input.login);
    const sources = normalizeSources(input.sources ?? []);
    const token = crypto.randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    const expiresAt = now + this.deps.config.invitationTtl * 1000;
    const locale = input.locale ?? knownLocale(auth.user.locale);

    let user: UserRow;
    try {
      user = await db.transaction().execute(async (trx) => {
        await this.checkIntegrations(trx, auth.accountId, sources);
        if (await findUserByLogin(trx, login)) throw conflict('This login is already registered');
        const created = await insertUser(trx, {
          account_id: auth.accountId,
          login,
          name: null,
          password_hash: null,
          role: 'manager',
          confirmed: 0,
          allow_all_deals: input.allowAllDeals ? 1 : 0,
          allowed_users: null,
          ...(locale ? { locale } : {}),
          created_at: now,
        });
        await replaceSources(trx, auth.accountId, created.id, sources);
        await insertInvitation(trx, {
          account_id: auth.accountId,
          user_id: created.id,
          token_hash: sha256(token),
          expires_at: expiresAt,
          created_at: now,
        });
        return created;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('This login is already registered');
      throw err;
    }

    const account = await findAccount(db, auth.accountId);
    const mail = invitationMail({
      to: login,
      link: invitationLink(this.deps.config, token),
      accountName: account?.name ?? 'Parley',
      inviterName: auth.user.name,
      expiresAt,
      locale: locale ?? 'en',
    });
    try {
      await this.mailer.send(mail);
    } catch (err) {
      await deleteUser(db, auth.accountId, user.id);
      this.deps.log.error({ err, to: login }, 'invitation e-mail could not be sent; the employee was not added');
      throw new AppError(502, 'mail_failed', 'The invitation e-mail could not be sent; the employee was not added');
    }
    return this.list(auth.accountId);
  }

  /**
   * `PUT /managers/<id>`: replaces the access records when `sources` is given, sets `allowAllDeals`,
   * `locale` and `available` when given. The owner always reaches everything: restricting it is a
   * 400. An employee may change its own `locale` and `available` alone; everything else is the owner's.
   */
  async update(auth: AuthContext, id: number, patch: EmployeeUpdate): Promise<Employee> {
    // An employee may change its own language and availability; everything else is the owner's.
    const personalOnly =
      id === auth.userId &&
      patch.sources === undefined &&
      patch.allowAllDeals === undefined &&
      (patch.locale !== undefined || patch.available !== undefined);
    if (!personalOnly) requireOwner(auth);
    const personal = {
      ...(patch.locale !== undefined ? { locale: patch.locale } : {}),
      ...(patch.available !== undefined ? { available: patch.available ? 1 : 0 } : {}),
    };
    const db = this.deps.db.kysely;
    const user = await findUser(db, auth.accountId, id);
    if (!user) throw notFound('Employee not found');
    if (personalOnly) {
      await updateUser(db, auth.accountId, id, personal);
      return this.get(auth.accountId, id);
    }
    const sources = patch.sources && normalizeSources(patch.sources);
    if (user.role === 'owner') {
      if ((sources && sources.length > 0) || patch.allowAllDeals === false) {
        throw invalid("The owner's access cannot be restricted");
      }
      if (Object.keys(personal).length) await updateUser(db, auth.accountId, id, personal);
      return this.get(auth.accountId, id);
    }
    await db.transaction().execute(async (trx) => {
      if (Object.keys(personal).length) await updateUser(trx, auth.accountId, id, personal);
      if (sources) {
        await this.checkIntegrations(trx, auth.accountId, sources);
        await replaceSources(trx, auth.accountId, id, sources);
      }
      if (patch.allowAllDeals !== undefined) {
        await updateUser(trx, auth.accountId, id, { allow_all_deals: patch.allowAllDeals ? 1 : 0 });
      }
    });
    return this.get(auth.accountId, id);
  }

  /** `PUT /managers/users-access/<id>`: the list replaces the previous one; every id must be an employee here. */
  async setAllowedUsers(auth: AuthContext, id: number, allowedUsers: number[]): Promise<Employee> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    const user = await findUser(db, auth.accountId, id);
    if (!user) throw notFound('Employee not found');
    const ids = [...new Set(allowedUsers)];
    const known = await existingUserIds(db, auth.accountId, ids);
    const details: ErrorDetail[] = allowedUsers.flatMap((uid, i) =>
      known.has(uid) ? [] : [{ path: `body.allowedUsers.${i}`, message: `no employee ${uid} in this account` }],
    );
    if (details.length) throw invalid('allowedUsers names employees that do not exist in this account', details);
    await updateUser(db, auth.accountId, id, { allowed_users: JSON.stringify(ids) });
    return this.get(auth.accountId, id);
  }

  /**
   * Removes a manager: its leads are unassigned (those without a status are inbox leads again), its
   * sessions end, and it disappears from other employees' `allowedUsers`. The owner stays.
   */
  async remove(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    const user = await findUser(db, auth.accountId, id);
    if (!user) throw notFound('Employee not found');
    if (user.role === 'owner') throw invalid('The account owner cannot be deleted');
    const now = this.deps.clock.now();
    await db.transaction().execute(async (trx) => {
      for (const lead of await unassignLeads(trx, auth.accountId, id, now)) {
        await recordEvent(
          trx,
          {
            accountId: auth.accountId,
            type: 'lead.changed',
            leadId: lead.id,
            payload: { leadId: lead.id, changes: ['userId'], lead: presentLead(lead) },
          },
          now,
        );
      }
      // The row goes below, which alone makes its tokens fail; revoking first keeps that true even
      // if removal ever becomes a soft delete.
      await endUserSessions(trx, auth.accountId, id, now);
      await forgetAllowedUser(trx, auth.accountId, id);
      await deleteUser(trx, auth.accountId, id);
    });
    announceSessionsEnded(auth.accountId, id);
  }

  /** `POST /auth/invitation`: confirms the invited employee once, with its name and password; answers like login. */
  async acceptInvitation(input: InvitationAcceptance): Promise<TokenPair> {
    const db = this.deps.db.kysely;
    const invitation = await findInvitationByHash(db, sha256(input.token));
    const now = this.deps.clock.now();
    if (!invitation || invitation.used_at !== null || invitation.expires_at <= now) {
      throw unauthorized(INVALID_INVITATION);
    }
    const passwordHash = await hashPassword(input.pass);
    const user = await db.transaction().execute(async (trx) => {
      if (!(await markInvitationUsed(trx, invitation.id, now))) throw unauthorized(INVALID_INVITATION);
      const invited = await findUser(trx, invitation.account_id, invitation.user_id);
      if (!invited || invited.confirmed) throw unauthorized(INVALID_INVITATION);
      await updateUser(trx, invited.account_id, invited.id, {
        name: input.name.trim(),
        password_hash: passwordHash,
        confirmed: 1,
      });
      return { ...invited, name: input.name.trim(), password_hash: passwordHash, confirmed: 1 };
    });
    this.deps.log.info({ userId: user.id, accountId: user.account_id }, 'invitation accepted');
    return this.auth.issuePair(user);
  }

  /** Every non-null saId must be an integration of the account (400 otherwise, nothing written). */
  private async checkIntegrations(db: Parameters<typeof existingIntegrationIds>[0], accountId: number, sources: SourceInput[]) {
    const ids = sources.flatMap((s) => (s.saId === null ? [] : [s.saId]));
    const known = await existingIntegrationIds(db, accountId, ids);
    const details: ErrorDetail[] = sources.flatMap((s, i) =>
      s.saId === null || known.has(s.saId) ? [] : [{ path: `body.sources.${i}.saId`, message: `no integration ${s.saId} in this account` }],
    );
    if (details.length) throw invalid('sources names integrations that do not exist in this account', details);
  }
}

/**
 * docs/api/resources.md: an empty array gives every integration; a single record with saId null gives none.
 * Repeated saIds collapse into one; saId null next to real integrations is contradictory (400).
 */
function normalizeSources(sources: SourceInput[]): SourceInput[] {
  const seen = new Set<number | null>();
  const unique = sources.filter((s) => {
    if (seen.has(s.saId)) return false;
    seen.add(s.saId);
    return true;
  });
  if (unique.length > 1 && seen.has(null)) {
    throw invalid('A record with saId null (no integration) must be the only one', [
      { path: 'body.sources', message: 'mixes saId null with integrations' },
    ]);
  }
  return unique;
}

function toEmployee(user: UserRow, records: SourceRecord[]): Employee {
  return {
    id: user.id,
    name: user.name,
    login: user.login,
    role: user.role,
    confirmed: user.confirmed === 1,
    allowAllDeals: user.allow_all_deals === 1,
    sources: records.map((r) => ({ id: r.id, saId: r.sa_id })),
    allowedUsers: user.allowed_users === null ? null : parseIdList(user.allowed_users),
    metadata: JSON.parse(user.metadata) as Record<string, unknown>,
    locale: knownLocale(user.locale),
    available: user.available === 1,
  };
}
