import type { LeadNoteRow } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid } from '../errors.js';
import { scopeOf, visibleLead } from '../policy/policy.js';
import { resolveMentions } from './mentions.js';
import * as repo from './notes.repo.js';

export const NOTE_MAX = 10_000;

/** ISO 8601 UTC with milliseconds, as every instant of the API. */
const iso = (ms: number) => new Date(ms).toISOString();

/** The note's API shape, also the `note` of `lead.note.created`. */
export function presentNote(row: LeadNoteRow) {
  return {
    id: row.id,
    leadId: row.lead_id,
    userId: row.user_id,
    text: row.text,
    mentions: JSON.parse(row.mentions) as number[],
    createdAt: iso(row.created_at),
  };
}

/**
 * Internal notes on a lead (docs/api/leads.md "Internal notes"): employees who see the lead read
 * and write them; they never reach the customer or a channel. `@mentions` of employees are
 * resolved when the note is written and carried by the `lead.note.created` event, from which the
 * agent app notifies the employees named.
 */
export class NotesService {
  constructor(private readonly deps: Deps) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async list(auth: AuthContext, leadId: number): Promise<LeadNoteRow[]> {
    const lead = await visibleLead(this.db, await scopeOf(this.db, auth), leadId);
    return repo.listNotes(this.db, lead.id);
  }

  async create(auth: AuthContext, leadId: number, input: { text: string }): Promise<LeadNoteRow> {
    // PostgreSQL text cannot hold NUL; it never means anything in a note.
    const text = input.text.replaceAll('\u0000', '').trim();
    if (!text) throw invalid('Invalid request: body.text is empty', [{ path: 'body.text', message: 'must not be blank' }]);
    const scope = await scopeOf(this.db, auth);
    return this.db.transaction().execute(async (trx) => {
      const lead = await visibleLead(trx, scope, leadId);
      const mentions = resolveMentions(text, await repo.mentionableEmployees(trx, auth.accountId));
      const now = this.deps.clock.now();
      const note = await repo.insertNote(trx, { accountId: auth.accountId, leadId: lead.id, userId: auth.userId, text, mentions, now });
      await recordEvent(
        trx,
        { accountId: auth.accountId, leadId: lead.id, type: 'lead.note.created', payload: { leadId: lead.id, note: presentNote(note) } },
        now,
      );
      return note;
    });
  }
}
