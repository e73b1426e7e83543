import type { Deps } from '../context.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { DeviceRow } from '../../db/schema.js';
import { invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { BlockedAddressError, checkHost } from '../../net/address-guard.js';
import * as repo from './devices.repo.js';

export interface WebSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface NewDevice {
  platform: 'web' | 'fcm';
  subscription?: WebSubscription;
  token?: string;
  name?: string;
}

export interface DeviceView {
  id: number;
  platform: 'web' | 'fcm';
  name: string | null;
  createdAt: number;
}

const base64urlBytes = (s: string): number => (/^[A-Za-z0-9_-]+={0,2}$/.test(s) ? Buffer.from(s, 'base64url').length : -1);

/** The signed-in employee's push devices, and the owner's preview switch. */
export class DevicesService {
  constructor(private readonly deps: Deps) {}

  async register(auth: AuthContext, input: NewDevice): Promise<DeviceView> {
    let address: string;
    let keys: string | null = null;
    const [wanted, other] = input.platform === 'web' ? (['subscription', 'token'] as const) : (['token', 'subscription'] as const);
    if (input[wanted] === undefined || input[other] !== undefined) {
      throw invalid(`A ${input.platform} device takes \`${wanted}\` (and no \`${other}\`)`, [
        { path: `/${wanted}`, message: 'is required' },
      ]);
    }
    if (input.subscription) {
      await this.checkSubscription(input.subscription);
      address = input.subscription.endpoint;
      keys = JSON.stringify({ p256dh: input.subscription.keys.p256dh, auth: input.subscription.keys.auth });
    } else {
      // biome-ignore lint/style/noNonNullAssertion: checked above: a device other than web takes a token
      address = input.token!;
    }
    const row = await repo.upsertDevice(this.deps.db.kysely, {
      account_id: auth.accountId,
      user_id: auth.userId,
      platform: input.platform,
      address,
      keys,
      name: input.name ?? null,
      created_at: this.deps.clock.now(),
    });
    return view(row);
  }

  async list(auth: AuthContext): Promise<DeviceView[]> {
    return (await repo.listUserDevices(this.deps.db.kysely, auth.accountId, auth.userId)).map(view);
  }

  /** Another employee's device, like an unknown one, is not found. */
  async remove(auth: AuthContext, id: number): Promise<void> {
    if (!(await repo.deleteUserDevice(this.deps.db.kysely, auth.accountId, auth.userId, id))) throw notFound('Device not found');
  }

  async settings(auth: AuthContext): Promise<{ previews: boolean }> {
    return { previews: await repo.pushPreviews(this.deps.db.kysely, auth.accountId) };
  }

  async setSettings(auth: AuthContext, patch: { previews: boolean }): Promise<{ previews: boolean }> {
    requireOwner(auth);
    await repo.setPushPreviews(this.deps.db.kysely, auth.accountId, patch.previews);
    return this.settings(auth);
  }

  /**
   * RFC 8030/8291: an https endpoint of a push service (http and private addresses only when
   * PARLEY_WEBHOOK_ALLOW_PRIVATE is set, for development), a P-256 public key (65 bytes,
   * uncompressed) and a 16-byte auth secret.
   */
  private async checkSubscription(sub: WebSubscription): Promise<void> {
    const details: Array<{ path: string; message: string }> = [];
    let url: URL | undefined;
    try {
      url = new URL(sub.endpoint);
    } catch {
      details.push({ path: '/subscription/endpoint', message: 'must be an absolute URL' });
    }
    const allowPrivate = this.deps.config.webhookAllowPrivate;
    if (url && url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
      details.push({ path: '/subscription/endpoint', message: 'must use https' });
    }
    const p256dh = base64urlBytes(sub.keys.p256dh);
    if (p256dh !== 65 || Buffer.from(sub.keys.p256dh, 'base64url')[0] !== 4) {
      details.push({ path: '/subscription/keys/p256dh', message: 'must be an uncompressed P-256 public key (65 bytes, base64url)' });
    }
    if (base64urlBytes(sub.keys.auth) !== 16) details.push({ path: '/subscription/keys/auth', message: 'must be 16 bytes, base64url' });
    if (details.length) throw invalid('Invalid push subscription', details);
    if (url && !allowPrivate) {
      try {
        await checkHost(url.hostname);
      } catch (err) {
        const message = err instanceof BlockedAddressError ? 'must not point to a private address' : 'host does not resolve';
        throw invalid('Invalid push subscription', [{ path: '/subscription/endpoint', message }]);
      }
    }
  }
}

function view(row: DeviceRow): DeviceView {
  return { id: row.id, platform: row.platform, name: row.name, createdAt: row.created_at };
}
