import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { Services } from '../../services.js';
import type { AuthContext } from '../../domain/auth/auth-context.js';
import { parseBoundedJson } from '../../domain/json-limits.js';

/** How long a connection may stay without a token (first message) before it is closed. */
const AUTH_WAIT_MS = 10_000;

/**
 * `GET /v1.3/realtime` upgraded to a WebSocket: the events of docs/api/webhooks.md the employee may see.
 *
 * - Token: `?token=<access token>`, or the first message `{"token": "..."}` (or the bare token).
 * - `?lastEventId=<id>`: first the events after that id (from the outbox), then live ones.
 * - Server messages: `{"type":"ready"}` once catch-up was sent; `{"type":"event","id":n,"event":{...}}`
 *   (the v1.3 payload); `{"type":"reset"}` when too much was missed to replay (reload state);
 *   `{"type":"error","error":...}` before closing with 4401 (bad token, or the employee's sessions
 *   ended since: password reset, sign-out everywhere, removal) or 4400 (bad request).
 */
export function registerRealtimeRoutes(app: FastifyInstance, services: Services): void {
  app.get<{ Querystring: { token?: string; lastEventId?: string } }>(
    '/v1.3/realtime',
    {
      websocket: true,
      schema: {
        tags: ['realtime'],
        summary: 'Realtime event stream (WebSocket)',
        description:
          'Upgrade to a WebSocket. Authenticate with ?token= or a first message {"token": "..."}; pass ?lastEventId= to ' +
          'receive missed events first. Messages: {type:"ready"}, {type:"event", id, event}, {type:"reset"}.',
        querystring: {
          type: 'object',
          properties: { token: { type: 'string', maxLength: 4096 }, lastEventId: { type: 'string', maxLength: 20 } },
        },
      },
    },
    (socket: WebSocket, req) => {
      let unsubscribe: (() => void) | undefined;
      let closed = false;
      socket.on('close', () => {
        closed = true;
        unsubscribe?.();
      });
      const fail = (code: number, error: string) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'error', error }));
        socket.close(code, error);
      };
      const rawLast = req.query.lastEventId;
      if (rawLast !== undefined && !/^\d{1,15}$/.test(rawLast)) return fail(4400, 'lastEventId must be an integer');
      const lastEventId = rawLast === undefined ? undefined : Number(rawLast);

      const start = async (token: string) => {
        let auth: AuthContext;
        try {
          auth = await services.auth.authenticate(token);
        } catch {
          return fail(4401, 'unauthorized');
        }
        if (closed) return;
        const send = (message: string) => {
          if (socket.readyState === socket.OPEN) socket.send(message);
        };
        try {
          // The employee's sessions ended (password reset, sign-out everywhere, removal): 4401 as for a bad token.
          const end = () => fail(4401, 'session ended');
          const stopEvents = await services.realtime.subscribe(auth, send, lastEventId, end);
          // While connected the employee is present: push notifications wait (src/push/).
          const leave = services.presence.enter(auth.userId);
          unsubscribe = () => {
            stopEvents();
            leave();
          };
        } catch (err) {
          req.log.error({ err }, 'realtime subscribe failed');
          return fail(1011, 'internal error');
        }
        if (closed) return unsubscribe();
        send(JSON.stringify({ type: 'ready' }));
      };

      if (req.query.token) return void start(req.query.token);
      const timer = setTimeout(() => fail(4401, 'no token'), AUTH_WAIT_MS);
      socket.once('message', (data) => {
        clearTimeout(timer);
        const text = data.toString();
        let token = text.trim();
        try {
          const parsed = parseBoundedJson(text) as { token?: unknown };
          if (parsed && typeof parsed === 'object' && typeof parsed.token === 'string') token = parsed.token;
        } catch {
          // the bare token
        }
        void start(token);
      });
      socket.on('close', () => clearTimeout(timer));
    },
  );
}
