import type { CustomerRow, ProfileRow } from '../../db/schema.js';
import type { Executor } from '../../db/database.js';
import { ChannelRejectedError, type ProfileUpdate } from '../channels/channel.js';
import type { ChannelRegistry } from '../channels/registry.js';
import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { canUseIntegration, scopeOf, visibleCustomer, visibleCustomers, type Scope } from '../policy/policy.js';
import { channelAppError } from '../integrations/channel-errors.js';
import { invalid } from '../errors.js';
import { recordLeadChange } from '../leads/lead-events.js';
import { listIntegrations } from '../integrations/integrations.repo.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import * as repo from './customers.repo.js';
import { defaultCountryOf } from '../accounts/account-settings.js';
import { changedFields, customerView, normalizeCustomerPatch, type CustomerPatchInput, type CustomerView } from './customers.types.js';
import { groupBy } from '../group-by.js';

/**
 * Customers (docs/api/resources.md "Customer"): read, edit and refresh. An employee reaches a customer through
 * the leads it sees (docs/api/auth.md); otherwise, and for other accounts' ids, 404. What an
 * employee is shown lists only the profiles on integrations it may use; events carry them all.
 */
export class CustomersService {
  constructor(
    private readonly deps: Deps,
    private readonly integrations: IntegrationsService,
    private readonly channels: ChannelRegistry,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async get(auth: AuthContext, id: number): Promise<CustomerView> {
    const scope = await scopeOf(this.db, auth);
    const customer = await visibleCustomer(this.db, scope, id);
    return this.viewFor(scope, customer, await repo.listProfiles(this.db, auth.accountId, id));
  }

  /**
   * Several customers at once (`GET /v1.3/customers?id=`): those of `ids` the caller sees, in the
   * order asked, each as {@link get} answers it; the others are left out. Two queries whatever the
   * count: a client reading a whole account asks for 200 customers in one request.
   */
  async getMany(auth: AuthContext, ids: number[]): Promise<CustomerView[]> {
    const scope = await scopeOf(this.db, auth);
    const customers = new Map((await visibleCustomers(this.db, scope, ids)).map((c) => [c.id, c]));
    const profiles = groupBy(await repo.listProfilesOf(this.db, auth.accountId, [...customers.keys()]), (p) => p.customer_id);
    return ids.flatMap((id) => {
      const customer = customers.get(id);
      return customer ? [this.viewFor(scope, customer, profiles.get(id) ?? [])] : [];
    });
  }

  /** Changes the given fields; `customer.changed` is recorded only when a value really changed. */
  async update(auth: AuthContext, id: number, input: CustomerPatchInput): Promise<CustomerView> {
    const patch = normalizeCustomerPatch(input, await defaultCountryOf(this.deps, auth.accountId));
    const scope = await scopeOf(this.db, auth);
    return this.db.transaction().execute(async (trx) => {
      const customer = await visibleCustomer(trx, scope, id);
      const changes = changedFields(customer, patch);
      const profiles = await repo.listProfiles(trx, auth.accountId, id);
      if (!Object.keys(changes).length) return this.viewFor(scope, customer, profiles);
      const updated = await repo.updateCustomer(trx, auth.accountId, id, { ...changes, updated_at: this.deps.clock.now() });
      await this.recordChanged(trx, updated, profiles);
      return this.viewFor(scope, updated, profiles);
    });
  }

  /**
   * The account's other customers with this customer's phone that the caller may see: people the
   * customer card offers to merge (docs/api/resources.md "Merging customers"). Never merged
   * automatically: a shared family phone is not one person.
   */
  async samePhone(auth: AuthContext, id: number): Promise<SamePhoneCustomer[]> {
    const scope = await scopeOf(this.db, auth);
    const customer = await visibleCustomer(this.db, scope, id);
    if (customer.phone === null) return [];
    const found: SamePhoneCustomer[] = [];
    for (const other of await repo.customersWithPhone(this.db, auth.accountId, customer.phone, id)) {
      const seen = await visibleCustomer(this.db, scope, other.id).then(
        () => true,
        () => false,
      );
      if (seen) found.push({ id: other.id, name: other.name || other.login, phone: other.phone ?? '' });
    }
    return found;
  }

  /**
   * Merges customer `from` into `id` (docs/api/resources.md "Merging customers"): the caller must
   * see both (otherwise 404); `from`'s profiles, channels and leads move, `id` keeps its fields and
   * takes `from`'s where its own are empty, and `from` is deleted, in one transaction. Recorded:
   * `lead.changed` (`customerId`) for each moved lead, `customer.changed` for the kept customer and
   * `customer.merged` naming the one that went.
   */
  async merge(auth: AuthContext, id: number, from: number): Promise<CustomerView> {
    if (from === id) throw invalid('A customer cannot be merged into itself', [{ path: 'body.from', message: 'must be another customer' }]);
    const scope = await scopeOf(this.db, auth);
    return this.db.transaction().execute(async (trx) => {
      await visibleCustomer(trx, scope, id);
      await visibleCustomer(trx, scope, from);
      const now = this.deps.clock.now();
      const { customer, movedLeads } = await repo.mergeCustomer(trx, auth.accountId, from, id, now);
      for (const lead of movedLeads) await recordLeadChange(trx, { ...lead, customer_id: from }, lead, ['customerId'], now);
      const profiles = await repo.listProfiles(trx, auth.accountId, id);
      await this.recordChanged(trx, customer, profiles);
      await recordEvent(
        trx,
        {
          accountId: auth.accountId,
          type: 'customer.merged',
          payload: { customerId: id, mergedCustomerId: from, customer: customerView(customer, profiles) },
        },
        now,
      );
      return this.viewFor(scope, customer, profiles);
    });
  }

  /**
   * Refreshes the avatar (and the profiles' public data) from the providers whose adapters can read
   * profiles. Newest profile first: its avatar becomes the customer's. A provider that refuses
   * (blocked, profile gone) is skipped; when every provider asked failed, the failure is the
   * answer (502/504). Without any adapter to ask, the customer is answered unchanged.
   */
  async refresh(auth: AuthContext, id: number): Promise<CustomerView> {
    const scope = await scopeOf(this.db, auth);
    const customer = await visibleCustomer(this.db, scope, id);
    const profiles = await repo.listProfiles(this.db, auth.accountId, id);
    const fetched = await this.fetchProfiles(auth.accountId, [...profiles].reverse());
    if (!fetched.length) return this.viewFor(scope, customer, profiles);

    return this.db.transaction().execute(async (trx) => {
      let changed = false;
      for (const { profile, update } of fetched) {
        const patch = profilePatch(profile, update);
        if (!Object.keys(patch).length) continue;
        await repo.updateProfile(trx, auth.accountId, profile.id, patch);
        changed = true;
      }
      const avatar = fetched.find((f) => f.update.avatar)?.update.avatar;
      const current = await visibleCustomer(trx, scope, id);
      let result = current;
      if (avatar && avatar !== current.avatar) {
        result = await repo.updateCustomer(trx, auth.accountId, id, { avatar, updated_at: this.deps.clock.now() });
        changed = true;
      }
      const fresh = await repo.listProfiles(trx, auth.accountId, id);
      if (changed) await this.recordChanged(trx, result, fresh);
      return this.viewFor(scope, result, fresh);
    });
  }

  private async fetchProfiles(accountId: number, profiles: ProfileRow[]) {
    const ids = [...new Set(profiles.map((p) => p.integration_id))];
    const integrations = new Map((await listIntegrations(this.db, accountId, ids)).map((row) => [row.id, row]));
    const fetched: Array<{ profile: ProfileRow; update: ProfileUpdate }> = [];
    let answered = 0;
    let failure: unknown;
    for (const profile of profiles) {
      const integration = integrations.get(profile.integration_id);
      const adapter = integration && this.channels.get(integration.type);
      if (!integration || !adapter?.fetchProfile) continue;
      try {
        const update = await adapter.fetchProfile(this.integrations.channelIntegration(integration), profile.social_id);
        answered++;
        if (update) fetched.push({ profile, update });
      } catch (err) {
        if (err instanceof ChannelRejectedError) {
          answered++;
          continue;
        }
        this.deps.log.warn({ err, profileId: profile.id, integrationId: integration.id }, 'profile refresh failed');
        failure ??= err;
      }
    }
    if (!answered && failure !== undefined) throw channelAppError(failure);
    return fetched;
  }

  private async recordChanged(trx: Executor, customer: CustomerRow, profiles: ProfileRow[]): Promise<void> {
    await recordEvent(
      trx,
      {
        accountId: customer.account_id,
        type: 'customer.changed',
        payload: { customerId: customer.id, customer: customerView(customer, profiles) },
      },
      this.deps.clock.now(),
    );
  }

  private viewFor(scope: Scope, customer: CustomerRow, profiles: ProfileRow[]): CustomerView {
    return customerView(
      customer,
      profiles.filter((p) => canUseIntegration(scope, p.integration_id)),
    );
  }
}

/** Another customer with the same phone (`GET /v1.3/customers/<id>/same-phone`). */
export interface SamePhoneCustomer {
  id: number;
  name: string;
  phone: string;
}

function profilePatch(profile: ProfileRow, update: ProfileUpdate) {
  const patch: Partial<Pick<ProfileRow, 'avatar' | 'login' | 'name' | 'profile_url'>> = {};
  if (update.avatar && update.avatar !== profile.avatar) patch.avatar = update.avatar;
  if (update.login && update.login !== profile.login) patch.login = update.login;
  if (update.name && update.name !== profile.name) patch.name = update.name;
  if (update.profileUrl && update.profileUrl !== profile.profile_url) patch.profile_url = update.profileUrl;
  return patch;
}
