import type { Executor } from '../../db/database.js';
import type { LeadNoteRow } from '../../db/schema.js';

export async function listNotes(db: Executor, leadId: number): Promise<LeadNoteRow[]> {
  return db.selectFrom('lead_notes').selectAll().where('lead_id', '=', leadId).orderBy('id').execute();
}

export async function insertNote(
  trx: Executor,
  note: { accountId: number; leadId: number; userId: number | null; text: string; mentions: number[]; now: number },
): Promise<LeadNoteRow> {
  return trx
    .insertInto('lead_notes')
    .values({
      account_id: note.accountId,
      lead_id: note.leadId,
      user_id: note.userId,
      text: note.text,
      mentions: JSON.stringify(note.mentions),
      created_at: note.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The account's employees as mentions need them. */
export async function mentionableEmployees(
  db: Executor,
  accountId: number,
): Promise<Array<{ id: number; name: string | null; login: string }>> {
  return db.selectFrom('users').select(['id', 'name', 'login']).where('account_id', '=', accountId).execute();
}
