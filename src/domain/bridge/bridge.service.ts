import type { Readable } from 'node:stream';
import type { IncomingMessage } from '../channels/channel.js';
import type { BridgeHub } from './bridge-hub.js';
import { bridgeTokenMatches, hashBridgeToken, isBridgeType, newBridgeToken } from './bridge-types.js';
import { BRIDGE_PROTOCOL_VERSION, type BridgeInbound } from './protocol.js';
import type { IntegrationRow } from '../../db/schema.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import type { IngestService } from '../conversations/ingest.service.js';
import { invalid } from '../errors.js';
import type { FilesService } from '../files/files.service.js';
import type { StoredFile } from '../files/files.types.js';
import { channelAppError } from '../integrations/channel-errors.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import { requireOwner } from '../policy/policy.js';
import { sessionLost } from '../channels/health-messages.js';
import * as repo from './bridge.repo.js';

type Msg<T extends BridgeInbound['type']> = Extract<BridgeInbound, { type: T }>;

/** The login prompt the agent app shows (docs/api/integrations.md "Account bridge"). */
export interface BridgePrompt {
  kind: 'qr' | 'phone' | 'code' | 'password';
  data?: string;
  expiresAt?: number;
  hint?: string;
  error?: string;
}

export interface BridgeView {
  protocol: number;
  status: string;
  online: boolean;
  prompt: (BridgePrompt & { expired: boolean }) | null;
}

/**
 * The account bridge's domain side: tokens (issued at connect, rotated by the owner, stored
 * hashed), the login prompts shown to the owner and the answers sent back, the session state as
 * the integration's status (`connecting` until logged in, `active` while alive and connected,
 * `auth failure` once the session is lost), the account's identity, inbound messages (stored once
 * by provider id) and media uploaded by the bridge.
 */
export class BridgeService {
  constructor(
    private readonly deps: Deps,
    private readonly parts: {
      hub: BridgeHub;
      ingest: IngestService;
      files: Pick<FilesService, 'store'>;
      integrations: IntegrationsService;
    },
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /** A new token for a bridge-served integration (shown once). Replaces any previous one. */
  async issueToken(row: IntegrationRow): Promise<string> {
    const token = newBridgeToken();
    await repo.saveToken(this.db, {
      integrationId: row.id,
      accountId: row.account_id,
      tokenHash: hashBridgeToken(token),
      now: this.deps.clock.now(),
    });
    return token;
  }

  /** Owner: a new token; the bridge connected with the old one is disconnected, wherever it is. */
  async rotateToken(auth: AuthContext, integrationId: number): Promise<string> {
    requireOwner(auth);
    const row = await this.bridgeIntegration(auth, integrationId);
    const token = await this.issueToken(row);
    await this.parts.hub.revoke(row.id);
    return token;
  }

  async view(auth: AuthContext, integrationId: number): Promise<BridgeView> {
    const row = await this.bridgeIntegration(auth, integrationId);
    const bridge = await repo.findBridgeRow(this.db, row.id);
    const prompt = bridge?.prompt ? (JSON.parse(bridge.prompt) as BridgePrompt) : null;
    const now = this.deps.clock.now();
    return {
      protocol: BRIDGE_PROTOCOL_VERSION,
      status: row.status,
      online: !!bridge?.conn_id,
      prompt: prompt ? { ...prompt, expired: prompt.expiresAt !== undefined && prompt.expiresAt <= now } : null,
    };
  }

  /** Owner: the answer to a login prompt, handed to the bridge; its refusal is 422 with the reason. */
  async answerLogin(auth: AuthContext, integrationId: number, answer: { kind: BridgePrompt['kind']; value: string }): Promise<void> {
    requireOwner(auth);
    const row = await this.bridgeIntegration(auth, integrationId);
    try {
      await this.parts.hub.request(row.id, 'login', answer, { requireActive: false });
    } catch (err) {
      throw channelAppError(err);
    }
  }

  /** The live bridge-served integration a token opens, or undefined (unknown, deleted, wrong token). */
  async authenticate(integrationId: number, token: string): Promise<IntegrationRow | undefined> {
    if (!token || token.length > 200) return undefined;
    const found = await repo.findBridge(this.db, integrationId);
    if (!found || !isBridgeType(found.integration.type)) return undefined;
    return bridgeTokenMatches(token, found.bridge.token_hash) ? found.integration : undefined;
  }

  /** The integration as it is now (a connected bridge's integration may have been disconnected since). */
  async liveIntegration(integrationId: number): Promise<IntegrationRow | undefined> {
    return (await repo.findBridge(this.db, integrationId))?.integration;
  }

  async onPrompt(integrationId: number, msg: Msg<'login.qr'> | Msg<'login.prompt'>): Promise<void> {
    const prompt: BridgePrompt =
      msg.type === 'login.qr'
        ? { kind: 'qr', data: msg.data, expiresAt: msg.expiresAt }
        : { kind: msg.kind, ...(msg.hint ? { hint: msg.hint } : {}), ...(msg.error ? { error: msg.error } : {}) };
    await repo.setPrompt(this.db, integrationId, JSON.stringify(prompt), this.deps.clock.now());
  }

  async onSession(integrationId: number, msg: Msg<'session'>): Promise<void> {
    if (msg.state === 'active') await repo.setPrompt(this.db, integrationId, null, this.deps.clock.now());
    await repo.setIntegrationStatus(this.db, integrationId, { status: msg.state === 'active' ? 'active' : 'auth failure' });
    await this.parts.integrations.health.statusChanged(integrationId);
    const row = await this.liveIntegration(integrationId);
    if (msg.state === 'lost') {
      this.deps.log.info({ integrationId, reason: msg.reason }, 'bridge reports its session lost');
      if (row) await this.parts.integrations.health.failed(integrationId, sessionLost(row.type, msg.reason));
    } else if (row) {
      await this.parts.integrations.health.recovered(row);
    }
  }

  /** The bridge went away: a connected session is not usable until a bridge is back. */
  async onOffline(integrationId: number): Promise<void> {
    if (await repo.markOffline(this.db, integrationId)) await this.parts.integrations.health.statusChanged(integrationId);
  }

  async onIdentity(integrationId: number, msg: Msg<'identity'>): Promise<void> {
    await repo.setIntegrationStatus(this.db, integrationId, {
      login: msg.login,
      external_id: msg.externalId,
      identifier: msg.identifier ?? msg.externalId,
      ...(msg.avatar !== undefined ? { avatar: msg.avatar } : {}),
    });
  }

  /** Stores an inbound message once (its provider id); the caller acknowledges it afterwards. */
  async onInbound(integration: IntegrationRow, msg: Msg<'inbound'>): Promise<void> {
    const incoming: IncomingMessage = {
      externalId: msg.id,
      datetime: msg.datetime,
      sender: {
        socialId: msg.sender.socialId,
        ...(msg.sender.login ? { login: msg.sender.login } : {}),
        ...(msg.sender.name ? { name: msg.sender.name } : {}),
        ...(msg.sender.avatar ? { avatar: msg.sender.avatar } : {}),
      },
      channel: { externalId: msg.chatId, type: 'message' },
      ...(msg.text ? { text: msg.text } : {}),
      ...(msg.attachments?.length
        ? {
            attachments: msg.attachments.map((a) => ({
              type: a.type,
              url: a.url,
              ...(a.name ? { text: a.name } : {}),
              ...(a.size !== undefined ? { filesize: a.size } : {}),
            })),
          }
        : {}),
      ...(msg.replyTo ? { replyToExternalId: msg.replyTo } : {}),
    };
    await this.parts.ingest.ingest(integration, incoming);
  }

  /** A file the bridge received, kept in Parley's storage under the integration's account. */
  async storeMedia(integration: IntegrationRow, body: Readable, meta: { filename?: string; mime: string }): Promise<StoredFile> {
    return this.parts.files.store(integration.account_id, body, meta);
  }

  private async bridgeIntegration(auth: AuthContext, integrationId: number): Promise<IntegrationRow> {
    const row = await this.parts.integrations.get(auth, integrationId);
    if (!isBridgeType(row.type)) {
      throw invalid(`Integration type ${row.type} is not served by an account bridge`, [
        { path: 'params.id', message: 'is not a bridge integration' },
      ]);
    }
    return row;
  }
}
