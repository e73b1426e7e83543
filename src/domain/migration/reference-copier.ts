import crypto from 'node:crypto';
import type { Mailer } from '../../mail/mailer.js';
import type { Config } from '../../config.js';
import { sha256 } from '../auth/token-signer.js';
import { integrationTypeInfo } from '../channels/integration-types.js';
import { insertInvitation } from '../employees/employees.repo.js';
import { invitationLink, invitationMail } from '../employees/invitation-mail.js';
import { tagKey } from '../tags/tags.types.js';
import { insertUser } from '../users/users.repo.js';
import { knownLocale } from '../users/users.types.js';
import { count, skip, transact, type MigrationContext } from './migration-context.js';
import * as repo from './migration.repo.js';
import {
  SchemaError,
  list,
  readEmployee,
  readIntegration,
  readPaymentType,
  readStatus,
  readTag,
  readTemplateGroup,
} from './source-records.js';
import { SourceError, type SourceClient } from './source-client.js';

/**
 * The account's reference data (docs/migrate.md "What is copied"): integrations (disconnected),
 * employees (with invitations, never a password), statuses, payment types, tags and reply
 * templates, and the list of webhooks. Each record is copied once; later runs leave copied ones as
 * they are here.
 */

/** A list of the source, on v1.3 or, where the source has none there (404), on v1.2. */
export async function sourceList(client: SourceClient, path: string): Promise<unknown[]> {
  let answer = await client.request('GET', `/v1.3${path}`);
  if (answer.status === 404) answer = await client.request('GET', `/v1.2${path}`);
  if (answer.status < 200 || answer.status >= 300)
    throw new SourceError(`GET ${path}: the source answered ${answer.status}`, answer.status);
  return list(answer.body, `the answer of GET ${path}`);
}

/** Reads each item with `read`; an item breaking its schema is skipped and reported. */
function readAll<T>(ctx: MigrationContext, kind: string, items: unknown[], read: (v: unknown) => T): T[] {
  const out: T[] = [];
  items.forEach((item, i) => {
    try {
      out.push(read(item));
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      skip(ctx.report, kind, `#${i + 1}`, err.message);
    }
  });
  return out;
}

export async function copyIntegrations(ctx: MigrationContext): Promise<void> {
  const integrations = readAll(ctx, 'integration', await sourceList(ctx.client, '/integrations'), readIntegration);
  for (const s of integrations) {
    if (ctx.ids.get('integration', s.id)) {
      count(ctx.report, 'integrations', false);
      continue;
    }
    if (!integrationTypeInfo(s.type)) {
      skip(ctx.report, 'integration', s.id, `type ${s.type} is not one Parley connects`);
      continue;
    }
    count(ctx.report, 'integrations');
    if (ctx.dryRun) continue;
    await transact(ctx, async (trx, map) => {
      const row = await trx
        .insertInto('integrations')
        .values({
          account_id: ctx.accountId,
          type: s.type,
          login: s.login,
          avatar: s.avatar,
          external_id: s.externalId,
          identifier: s.identifier,
          url: s.url,
          // Disconnected until the owner gives its credentials here: nothing reaches the provider.
          status: 'auth failure',
          credentials: null,
          created_at: ctx.now(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      map('integration', s.id, row.id);
    });
  }
}

export async function copyEmployees(ctx: MigrationContext, mail: { mailer: Mailer; config: Config; accountName: string }): Promise<void> {
  const employees = readAll(ctx, 'employee', await sourceList(ctx.client, '/managers'), readEmployee);
  const existing = new Map(
    (
      await repo.usersByLogin(
        ctx.db,
        employees.map((e) => e.login),
      )
    ).map((u) => [u.login, u]),
  );
  const invitations: Array<{ login: string; token: string; expiresAt: number }> = [];
  const created: typeof employees = [];
  let hasOwner = [...existing.values()].some((u) => u.account_id === ctx.accountId && u.role === 'owner');
  for (const e of employees) {
    if (ctx.ids.get('employee', e.id)) {
      count(ctx.report, 'employees', false);
      continue;
    }
    const here = existing.get(e.login);
    if (here && here.account_id !== ctx.accountId) {
      skip(ctx.report, 'employee', e.id, `${e.login} is an employee of another account here`);
      continue;
    }
    if (here) {
      // The target account's own employee with this login (`--into`): the same person.
      if (!ctx.dryRun) await transact(ctx, async (_trx, map) => map('employee', e.id, here.id));
      count(ctx.report, 'employees', false);
      continue;
    }
    count(ctx.report, 'employees');
    if (ctx.dryRun) continue;
    const role = e.role === 'owner' && !hasOwner ? 'owner' : 'manager';
    if (role === 'owner') hasOwner = true;
    const token = crypto.randomBytes(32).toString('base64url');
    const now = ctx.now();
    const expiresAt = now + mail.config.invitationTtl * 1000;
    await transact(ctx, async (trx, map) => {
      const user = await insertUser(trx, {
        account_id: ctx.accountId,
        login: e.login,
        name: e.name,
        password_hash: null,
        role,
        confirmed: 0,
        allow_all_deals: e.allowAllDeals || role === 'owner' ? 1 : 0,
        allowed_users: null,
        metadata: e.metadata,
        created_at: now,
      });
      await insertInvitation(trx, {
        account_id: ctx.accountId,
        user_id: user.id,
        token_hash: sha256(token),
        expires_at: expiresAt,
        created_at: now,
      });
      map('employee', e.id, user.id);
    });
    created.push(e);
    invitations.push({ login: e.login, token, expiresAt });
  }
  if (ctx.dryRun) return;
  // Access records and allowed employees name integrations and employees: set once all are here.
  await ctx.db.transaction().execute(async (trx) => {
    for (const e of created) {
      const userId = ctx.ids.num('employee', e.id);
      if (userId === undefined) continue;
      if (e.allowedUsers) {
        const allowed = e.allowedUsers.map((id) => ctx.ids.num('employee', id)).filter((id): id is number => id !== undefined);
        await trx
          .updateTable('users')
          .set({ allowed_users: JSON.stringify(allowed) })
          .where('id', '=', userId)
          .execute();
      }
      const records = e.sources.map((sa) => (sa === null ? null : ctx.ids.num('integration', sa))).filter((sa) => sa !== undefined);
      // A record of an integration not copied would widen the access to all: none is given instead.
      const lost = records.length < e.sources.length;
      const rows = lost && records.length === 0 ? [null] : records;
      if (rows.length)
        await trx
          .insertInto('user_sources')
          .values(rows.map((sa_id) => ({ account_id: ctx.accountId, user_id: userId, sa_id })))
          .execute();
    }
  });
  // Invitations speak the target owner's language (docs/api/resources.md: the inviter's locale).
  const owner = await ctx.db
    .selectFrom('users')
    .select('locale')
    .where('account_id', '=', ctx.accountId)
    .where('role', '=', 'owner')
    .executeTakeFirst();
  const locale = knownLocale(owner?.locale) ?? 'en';
  for (const inv of invitations) {
    try {
      await mail.mailer.send(
        invitationMail({
          to: inv.login,
          link: invitationLink(mail.config, inv.token),
          accountName: mail.accountName,
          inviterName: null,
          expiresAt: inv.expiresAt,
          locale,
        }),
      );
    } catch {
      ctx.report.invitationsNotSent.push(inv.login);
    }
  }
}

export async function copyStatuses(ctx: MigrationContext): Promise<Map<string, string>> {
  const statuses = readAll(ctx, 'status', await sourceList(ctx.client, '/statuses'), readStatus);
  const types = new Map(statuses.map((s) => [s.id, s.type]));
  for (const s of statuses) {
    if (ctx.ids.get('status', s.id)) {
      count(ctx.report, 'statuses', false);
      continue;
    }
    count(ctx.report, 'statuses');
    if (ctx.dryRun) continue;
    await transact(ctx, async (trx, map) => {
      const row = await trx
        .insertInto('statuses')
        .values({ account_id: ctx.accountId, name: s.name, type: s.type, position: s.order, color: s.color, created_at: ctx.now() })
        .returning('id')
        .executeTakeFirstOrThrow();
      map('status', s.id, row.id);
    });
  }
  return types;
}

export async function copyPaymentTypes(ctx: MigrationContext): Promise<void> {
  for (const p of readAll(ctx, 'payment type', await sourceList(ctx.client, '/payment-types'), readPaymentType)) {
    if (ctx.ids.get('payment_type', p.id)) {
      count(ctx.report, 'payment types', false);
      continue;
    }
    count(ctx.report, 'payment types');
    if (ctx.dryRun) continue;
    await transact(ctx, async (trx, map) => {
      const row = await trx
        .insertInto('payment_types')
        .values({ account_id: ctx.accountId, title: p.title })
        .returning('id')
        .executeTakeFirstOrThrow();
      map('payment_type', p.id, row.id);
    });
  }
}

/** Tags by their case-free key: a lead names its tags by value. Answers key -> our tag id. */
export async function copyTags(ctx: MigrationContext): Promise<Map<string, number>> {
  const byKey = new Map((await repo.tagsOf(ctx.db, ctx.accountId)).map((t) => [t.tag_key, t.id]));
  for (const t of readAll(ctx, 'tag', await sourceList(ctx.client, '/tags'), readTag)) await ensureTag(ctx, byKey, t.tag);
  return byKey;
}

export async function ensureTag(ctx: MigrationContext, byKey: Map<string, number>, tag: string): Promise<number | undefined> {
  const key = tagKey(tag);
  const known = byKey.get(key);
  if (known !== undefined) return known;
  count(ctx.report, 'tags');
  if (ctx.dryRun) {
    byKey.set(key, -1);
    return undefined;
  }
  const row = await ctx.db
    .insertInto('tags')
    .values({ account_id: ctx.accountId, tag, tag_key: key, created_at: ctx.now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  byKey.set(key, row.id);
  return row.id;
}

export async function copyTemplates(ctx: MigrationContext): Promise<void> {
  for (const g of readAll(ctx, 'template group', await sourceList(ctx.client, '/templates'), readTemplateGroup)) {
    const fresh = g.templates.filter((t) => !ctx.ids.get('template', t.id));
    const known = ctx.ids.get('template_group', g.id);
    count(ctx.report, 'templates', false, g.templates.length - fresh.length);
    if (known && !fresh.length) continue;
    count(ctx.report, 'templates', true, fresh.length);
    if (ctx.dryRun) continue;
    await transact(ctx, async (trx, map) => {
      let groupId = known === undefined ? undefined : Number(known);
      if (groupId === undefined) {
        const row = await trx
          .insertInto('template_groups')
          .values({ account_id: ctx.accountId, key: g.key, created_at: ctx.now() })
          .returning('id')
          .executeTakeFirstOrThrow();
        groupId = row.id;
        map('template_group', g.id, groupId);
      }
      for (const t of fresh) {
        const row = await trx
          .insertInto('templates')
          .values({
            account_id: ctx.accountId,
            group_id: groupId,
            template: t.template,
            hotkey: t.hotkey,
            user_id: t.userId === null ? null : (ctx.ids.num('employee', t.userId) ?? null),
            created_at: ctx.now(),
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        map('template', t.id, row.id);
      }
    });
  }
}

/** The source's webhook URLs, for the report: their secrets cannot be read, so they are registered again by hand. */
export async function listWebhooks(ctx: MigrationContext): Promise<void> {
  const answer = await ctx.client.request('GET', '/v1.3/webhooks');
  if (answer.status !== 200 || !Array.isArray(answer.body)) return;
  for (const w of answer.body as unknown[]) {
    const url = typeof w === 'object' && w !== null ? (w as { url?: unknown }).url : undefined;
    if (typeof url === 'string') ctx.report.webhooks.push(url);
  }
}
