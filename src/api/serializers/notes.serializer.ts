import { Type } from 'typebox';
import type { LeadNoteRow } from '../../db/schema.js';
import { presentNote } from '../../domain/notes/notes.service.js';

export const NoteObject = Type.Object(
  {
    id: Type.Integer(),
    leadId: Type.Integer(),
    userId: Type.Union([Type.Integer(), Type.Null()], { description: 'The author; null once that employee was removed' }),
    text: Type.String(),
    mentions: Type.Array(Type.Integer(), { description: 'Ids of the employees the text mentions with @name or @login' }),
    createdAt: Type.String({ description: 'ISO 8601 UTC' }),
  },
  { description: 'Internal note on a lead (employees only; never sent to the customer)' },
);

export function serializeNote(row: LeadNoteRow) {
  return presentNote(row);
}
