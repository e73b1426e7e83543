import { ensureFresh, getSession } from './client';
import type { RealtimeEvent } from './types';

export type RealtimeMessage =
  | { kind: 'event'; id: number; event: RealtimeEvent }
  | { kind: 'reset' }
  | { kind: 'ready' }
  /** A site widget visitor typing (live only, never replayed). */
  | { kind: 'typing'; leadId: number; typing: boolean }
  /** For this employee: a lead passed the first-response target (docs/api/automation.md). */
  | { kind: 'overdue'; id: number; leadId: number; awaitingSince: number; targetMinutes: number };
type Listener = (m: RealtimeMessage) => void;

import { backoff } from './realtime-backoff';

/**
 * The realtime stream (GET /v1.3/realtime): one WebSocket per tab, reconnecting with back-off and
 * resuming after the last event seen (`lastEventId`); `reset` tells listeners to reload.
 */
export class Realtime {
  private ws: WebSocket | null = null;
  private listeners = new Set<Listener>();
  private lastEventId: number | null = null;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = true;
  state: 'connecting' | 'open' | 'closed' = 'closed';
  private stateListeners = new Set<() => void>();

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onState(fn: () => void): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  private setState(s: Realtime['state']) {
    this.state = s;
    for (const fn of this.stateListeners) fn();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close();
    this.ws = null;
    this.lastEventId = null;
    this.setState('closed');
  }

  private emit(m: RealtimeMessage) {
    for (const fn of this.listeners) fn(m);
  }

  private async connect(forceRefresh = false): Promise<void> {
    if (this.stopped) return;
    this.setState('connecting');
    try {
      await ensureFresh(forceRefresh);
    } catch {
      return this.retry();
    }
    const session = getSession();
    if (!session || this.stopped) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const params = new URLSearchParams({ token: session.access });
    if (this.lastEventId !== null) params.set('lastEventId', String(this.lastEventId));
    const ws = new WebSocket(`${proto}//${location.host}/v1.3/realtime?${params}`);
    this.ws = ws;
    let authFailed = false;
    ws.onmessage = (e) => {
      let msg: {
        type?: string;
        id?: number;
        event?: RealtimeEvent;
        leadId?: number;
        typing?: boolean;
        notification?: { kind?: string; leadId?: number; awaitingSince?: number; targetMinutes?: number };
      };
      try {
        msg = JSON.parse(String(e.data));
      } catch {
        return;
      }
      if (msg.type === 'event' && typeof msg.id === 'number' && msg.event) {
        this.lastEventId = msg.id;
        this.emit({ kind: 'event', id: msg.id, event: msg.event });
      } else if (msg.type === 'ready') {
        this.attempt = 0;
        this.setState('open');
        this.emit({ kind: 'ready' });
      } else if (msg.type === 'reset') {
        this.lastEventId = null;
        this.emit({ kind: 'reset' });
      } else if (msg.type === 'typing' && typeof msg.leadId === 'number') {
        this.emit({ kind: 'typing', leadId: msg.leadId, typing: msg.typing !== false });
      } else if (msg.type === 'notification' && typeof msg.id === 'number' && msg.notification?.kind === 'firstResponseOverdue') {
        // Notifications are events of the outbox: a reconnect resumes after them, never replaying one.
        this.lastEventId = msg.id;
        const n = msg.notification;
        if (typeof n.leadId === 'number' && typeof n.awaitingSince === 'number' && typeof n.targetMinutes === 'number') {
          this.emit({ kind: 'overdue', id: msg.id, leadId: n.leadId, awaitingSince: n.awaitingSince, targetMinutes: n.targetMinutes });
        }
      }
    };
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      authFailed = e.code === 4401;
      this.setState('closed');
      this.retry(authFailed);
    };
  }

  private retry(forceRefresh = false) {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(forceRefresh), backoff(this.attempt++));
  }
}

export const realtime = new Realtime();
