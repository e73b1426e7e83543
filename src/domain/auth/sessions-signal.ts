import { EventEmitter } from 'node:events';

/**
 * In-process notice that a user's sessions ended (password reset, sign-out everywhere, removal),
 * emitted after the change committed, so this process's open sockets of that user close at once.
 * Other processes notice on their periodic session check (realtime hub).
 */
export const sessionsSignal = new EventEmitter().setMaxListeners(0);

export function announceSessionsEnded(accountId: number, userId: number): void {
  sessionsSignal.emit('ended', accountId, userId);
}
