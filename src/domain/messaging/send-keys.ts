import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '../context.js';
import { claimSendKey, releaseSendKey, sendKeyHeld } from './send-keys.repo.js';

/** How often a repeat waiting for another process's send looks whether it finished. */
const WAIT_STEP_MS = 50;
/** A claim outlives the send's timeout by this much; after that its process is taken for dead. */
const CLAIM_MARGIN_MS = 30_000;

/**
 * Idempotent sends across processes: a send with a customId first claims (lead, customId) in
 * send_keys. The claim ends in the transaction that stores the sent messages, or when the send
 * fails. A repeat that finds the key claimed by another process waits until the messages are
 * stored (and answers them) or the claim ends without them (and then sends itself).
 */
export class SendKeys {
  constructor(private readonly deps: Deps) {}

  /**
   * Returns `stored()`'s answer as soon as it has one, or claims the key and returns undefined
   * (the caller sends, then calls `release` or stores with `releaseSendKey` in its transaction).
   */
  async claimOrStored<T>(leadId: number, customId: string, stored: () => Promise<T | undefined>): Promise<T | undefined> {
    const db = this.deps.db.kysely;
    for (;;) {
      const done = await stored();
      if (done !== undefined) return done;
      const now = this.deps.clock.now();
      if (await claimSendKey(db, leadId, customId, now, now + this.deps.config.sendTimeoutMs + CLAIM_MARGIN_MS)) {
        // A send that finished between the look above and the claim stored its messages before
        // releasing the key: look once more now that the key is ours.
        const late = await stored();
        if (late === undefined) return undefined;
        await this.release(leadId, customId);
        return late;
      }
      // Another process is sending this very message: wait while its claim lives.
      while (await sendKeyHeld(db, leadId, customId, this.deps.clock.now())) await sleep(WAIT_STEP_MS);
    }
  }

  release(leadId: number, customId: string): Promise<void> {
    return releaseSendKey(this.deps.db.kysely, leadId, customId);
  }
}
