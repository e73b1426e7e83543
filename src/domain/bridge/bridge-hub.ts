import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { isPostgresUrl } from '../../config.js';
import type { BridgeRequestRow } from '../../db/schema.js';
import type { Deps } from '../context.js';
import type { BackgroundWorker } from '../workers.js';
import * as repo from './bridge.repo.js';
import { ChannelFailedError, ChannelOfflineError, ChannelRejectedError, ChannelTimeoutError } from '../channels/channel.js';
import type { BridgeOutbound, BridgeResult } from './protocol.js';

/** Hubs of one process (tests run several on one SQLite database) nudge each other through this. */
const bridgeSignal = new EventEmitter().setMaxListeners(0);

/** One bridge's WebSocket as the hub sees it. */
export interface BridgeConnection {
  readonly connId: string;
  readonly integrationId: number;
  send(message: BridgeOutbound): void;
  close(code: number, reason: string): void;
}

export type RequestKind = 'send' | 'check' | 'profile' | 'login';
const MESSAGE_TYPE: Record<RequestKind, 'send' | 'check' | 'profile' | 'login.answer'> = {
  send: 'send',
  check: 'check',
  profile: 'profile',
  login: 'login.answer',
};

type OkResult = Extract<BridgeResult, { ok: true }>;

export const newConnId = () => randomUUID();

/**
 * Routes requests to bridges across processes. A caller writes a `bridge_requests` row and waits;
 * whichever process holds the integration's bridge socket claims the row (an atomic UPDATE),
 * forwards it and records the answer; the caller reads it. Nudges travel in-process and, on
 * PostgreSQL, by NOTIFY parley_bridge (delivered on commit); a poll every PARLEY_EVENTS_POLL_MS
 * covers a lost nudge. A request is never forwarded after its deadline: the caller expires it
 * atomically, so it is answered (and stored) or given up, never both. A connection that ends puts
 * what it took back to pending, so a reconnected bridge gets it again with the same requestId
 * (bridges answer a repeated requestId without acting twice).
 */
export class BridgeHub implements BackgroundWorker {
  readonly name = 'bridge';
  private readonly local = new Map<number, BridgeConnection>();
  private readonly waiters = new Map<number, (row: BridgeRequestRow) => void>();
  private readonly onSignal = (payload: string) => void this.onNudge(payload);
  private listening: Promise<void> | undefined;
  private pgClient: { end(): Promise<void>; query(q: string): Promise<unknown> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly deps: Deps) {
    bridgeSignal.on('nudge', this.onSignal);
  }

  private get db() {
    return this.deps.db.kysely;
  }

  healthy(): boolean {
    return true;
  }

  /** Whether this process holds a socket of the integration's bridge. */
  holds(integrationId: number): boolean {
    return this.local.has(integrationId);
  }

  // --- callers -----------------------------------------------------------------------------------

  /**
   * Asks the integration's bridge and waits for its answer at most `timeoutMs`. No bridge
   * connected (or, with `requireActive`, not logged in): ChannelOfflineError before anything is
   * written. Refused: ChannelRejectedError; retryable failure: ChannelFailedError; no answer in
   * time: ChannelTimeoutError.
   */
  async request(
    integrationId: number,
    kind: RequestKind,
    body: Record<string, unknown>,
    opts: { requireActive: boolean; timeoutMs?: number },
  ): Promise<OkResult> {
    const found = await repo.findBridge(this.db, integrationId);
    if (!found?.bridge.conn_id) throw new ChannelOfflineError('No bridge is connected for this integration');
    if (opts.requireActive && found.integration.status !== 'active')
      throw new ChannelOfflineError('The bridge of this integration is not logged in');
    await this.start();
    const timeoutMs = opts.timeoutMs ?? this.deps.config.sendTimeoutMs;
    const now = this.deps.clock.now();
    const id = await repo.insertRequest(this.db, { integrationId, kind, payload: JSON.stringify(body), now, deadline: now + timeoutMs });
    const row = await this.waitFor(id, integrationId, timeoutMs);
    await repo.deleteRequest(this.db, id);
    const result = JSON.parse(row.result ?? '{}') as BridgeResult;
    if (result.ok) return result;
    if ('refused' in result) throw new ChannelRejectedError(result.refused);
    throw new ChannelFailedError(result.retryable);
  }

  private waitFor(id: number, integrationId: number, timeoutMs: number): Promise<BridgeRequestRow> {
    return new Promise<BridgeRequestRow>((resolve, reject) => {
      const timer = setTimeout(() => {
        void (async () => {
          this.waiters.delete(id);
          try {
            if (await repo.expireRequest(this.db, id)) {
              await repo.deleteRequest(this.db, id);
              return reject(new ChannelTimeoutError(`the bridge did not answer within ${timeoutMs} ms`));
            }
            // Answered in the same instant: the answer wins.
            const row = await repo.findRequest(this.db, id);
            if (row?.state === 'done') resolve(row);
            else reject(new ChannelTimeoutError(`the bridge did not answer within ${timeoutMs} ms`));
          } catch (err) {
            reject(err);
          }
        })();
      }, timeoutMs);
      this.waiters.set(id, (row) => {
        clearTimeout(timer);
        this.waiters.delete(id);
        resolve(row);
      });
      void this.nudge(`r:${integrationId}`);
      this.arm();
    });
  }

  private async checkWaiters(ids: number[]): Promise<void> {
    for (const row of await repo.requestsByIds(this.db, ids)) {
      if (row.state === 'done') this.waiters.get(row.id)?.(row);
    }
  }

  // --- connections -------------------------------------------------------------------------------

  /** A bridge authenticated: this process holds it now (a previous local socket is replaced). */
  async attach(conn: BridgeConnection): Promise<void> {
    await this.start();
    const previous = this.local.get(conn.integrationId);
    this.local.set(conn.integrationId, conn);
    if (previous && previous !== conn) previous.close(4409, 'replaced by a newer connection of this bridge');
    await repo.holdBridge(this.db, conn.integrationId, conn.connId, this.deps.clock.now());
    this.arm();
  }

  /** The bridge's session is usable: forward what waits for it. */
  async deliverPending(integrationId: number): Promise<void> {
    const conn = this.local.get(integrationId);
    if (!conn) return;
    const rows = await repo.claimPending(this.db, integrationId, conn.connId, this.deps.clock.now());
    for (const row of rows.sort((a, b) => a.id - b.id)) {
      const body = JSON.parse(row.payload) as Record<string, unknown>;
      conn.send({ ...body, type: MESSAGE_TYPE[row.kind as RequestKind], requestId: row.id, deadline: row.deadline } as BridgeOutbound);
    }
  }

  /** A bridge answered a request: recorded when it is its own request and still waited for. */
  async answer(conn: BridgeConnection, result: BridgeResult): Promise<void> {
    if (result.ok && result.externalIds === undefined && result.exists === undefined && result.profile === undefined) {
      if (await this.refusedSendWithoutIds(conn, result.requestId)) return;
    }
    if (await repo.finishRequest(this.db, result.requestId, conn.integrationId, JSON.stringify(result))) {
      await this.nudge(`d:${result.requestId}`);
      return;
    }
    const row = await repo.findRequest(this.db, result.requestId);
    if (row && row.integration_id === conn.integrationId) {
      // The caller gave up (504) or a repeat answer: the provider may hold a message Parley does not.
      this.deps.log.warn(
        { integrationId: conn.integrationId, requestId: result.requestId, state: row.state },
        'bridge answered a request no longer waited for',
      );
      return;
    }
    if (!row) {
      this.deps.log.warn(
        { integrationId: conn.integrationId, requestId: result.requestId },
        'bridge answered an unknown request (given up and removed, or never made)',
      );
      return;
    }
    conn.send({ type: 'error', code: 'not_your_request', message: `request ${result.requestId} is not a request of this integration` });
  }

  /**
   * A send's result must name the messages made (docs/channels/bridge.md "Messages"): one without
   * `externalIds` is a protocol error. The caller is answered 502 (`channel_failed`) and the socket
   * closed with 4400, as for a message that breaks its schema. True when `requestId` was such a send.
   */
  private async refusedSendWithoutIds(conn: BridgeConnection, requestId: number): Promise<boolean> {
    const row = await repo.findRequest(this.db, requestId);
    if (row?.kind !== 'send' || row.integration_id !== conn.integrationId) return false;
    const failed = { type: 'result', requestId, ok: false, retryable: 'the bridge answered a send without externalIds (protocol error)' };
    if (await repo.finishRequest(this.db, requestId, conn.integrationId, JSON.stringify(failed))) await this.nudge(`d:${requestId}`);
    conn.close(4400, `result ${requestId}: the result of a send must carry externalIds`);
    return true;
  }

  /** The bridge token changed: every process closes the integration's socket it holds. */
  async revoke(integrationId: number): Promise<void> {
    await this.nudge(`x:${integrationId}`);
  }

  /** The integration was disconnected: every process closes its bridge's socket (for good). */
  async disconnected(integrationId: number): Promise<void> {
    await this.nudge(`g:${integrationId}`);
  }

  /**
   * A socket ended: the integration is released and what it took goes back to pending. True when
   * no newer connection holds the bridge (the caller then marks the integration not active).
   */
  async detach(conn: BridgeConnection): Promise<boolean> {
    if (this.local.get(conn.integrationId) === conn) this.local.delete(conn.integrationId);
    const now = this.deps.clock.now();
    const released = await repo.releaseBridge(this.db, conn.integrationId, conn.connId, now);
    if ((await repo.returnTaken(this.db, conn.connId)) > 0) await this.nudge(`r:${conn.integrationId}`);
    return released;
  }

  // --- wake-ups ----------------------------------------------------------------------------------

  private async nudge(payload: string): Promise<void> {
    bridgeSignal.emit('nudge', payload);
    if (this.deps.db.dialect === 'postgres') await repo.notify(this.db, payload);
  }

  private async onNudge(payload: string): Promise<void> {
    try {
      const id = Number(payload.slice(2));
      if (!Number.isSafeInteger(id)) return;
      if (payload.startsWith('r:') && this.local.has(id)) await this.deliverPending(id);
      else if (payload.startsWith('x:')) this.local.get(id)?.close(4401, 'bridge token rotated');
      else if (payload.startsWith('g:')) this.local.get(id)?.close(4410, 'integration disconnected');
      else if (payload.startsWith('d:') && this.waiters.has(id)) await this.checkWaiters([id]);
    } catch (err) {
      this.deps.log.warn({ err, payload }, 'bridge wake-up failed; the poll retries');
    }
  }

  /** LISTEN on PostgreSQL (when the configured database is), once; resolves when listening. */
  private start(): Promise<void> {
    const url = this.deps.config.databaseUrl;
    if (this.listening || !isPostgresUrl(url) || this.deps.db.dialect !== 'postgres') return this.listening ?? Promise.resolve();
    this.listening = (async () => {
      try {
        const pg = (await import('pg')).default;
        const client = new pg.Client({ connectionString: url });
        client.on('error', (err) => this.deps.log.warn({ err }, 'bridge LISTEN connection failed; polling continues'));
        await client.connect();
        // `<schema> <nudge>` (bridge.repo.ts `notify`): another installation's schema is not ours,
        // and its integration ids are not ours either. A nudge without a schema comes from a
        // process of a version before it was named.
        const { rows } = await client.query<{ schema: string }>('select current_schema() as schema');
        const schema = rows[0]?.schema;
        client.on('notification', (n) => {
          const payload = n.payload ?? '';
          const at = payload.lastIndexOf(' ');
          if (at < 0) void this.onNudge(payload);
          else if (payload.slice(0, at) === schema) void this.onNudge(payload.slice(at + 1));
        });
        await client.query(`LISTEN ${repo.notifyChannel}`);
        this.pgClient = client;
        if (this.stopped) await client.end();
      } catch (err) {
        this.deps.log.warn({ err }, 'bridge LISTEN unavailable; polling continues');
      }
    })();
    return this.listening;
  }

  /** The safety-net poll, while anything waits or any bridge is held here. */
  private arm(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll().finally(() => {
        if (this.waiters.size || this.local.size) this.arm();
      });
    }, this.deps.config.eventsPollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      if (this.waiters.size) await this.checkWaiters([...this.waiters.keys()]);
      for (const id of this.local.keys()) await this.deliverPending(id);
      await repo.purgeStale(this.db, this.deps.clock.now());
    } catch (err) {
      this.deps.log.warn({ err }, 'bridge poll failed');
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    bridgeSignal.off('nudge', this.onSignal);
    if (this.timer) clearTimeout(this.timer);
    for (const conn of [...this.local.values()]) {
      conn.close(1001, 'server shutting down');
      await this.detach(conn).catch(() => undefined);
    }
    await this.listening;
    await this.pgClient?.end().catch(() => undefined);
  }
}
