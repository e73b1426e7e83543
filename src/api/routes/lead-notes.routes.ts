import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { IdParams } from '../schemas/common.js';
import { NoteObject, serializeNote } from '../serializers/notes.serializer.js';
import { NOTE_MAX } from '../../domain/notes/notes.service.js';

const tags = ['leads'];
const VISIBILITY = 'Whoever sees the lead reads and writes its notes; otherwise 404. Notes never reach the customer or a channel.';

/** Internal notes on a lead (v1.3 extension; docs/api/leads.md "Internal notes"). */
export const leadNotesRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/leads/:id/notes',
    schema: {
      tags,
      summary: 'Internal notes of a lead, oldest first',
      description: VISIBILITY,
      params: IdParams,
      response: { 200: Type.Array(NoteObject) },
    },
    handler: async (req, _reply, { services, auth }) => (await services.notes.list(auth, req.params.id)).map(serializeNote),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/leads/:id/notes',
    schema: {
      tags,
      summary: 'Write an internal note on a lead, with @mentions of employees',
      description:
        `${VISIBILITY} \`text\` (surrounding spaces dropped; blank: 400). A mention is \`@\` followed by an employee's name or login ` +
        '(without case; the longest fitting name wins); the ids are answered in `mentions`. Records `lead.note.created` ' +
        '`{leadId, note}`: on the realtime stream, and to webhooks only when their `events` list names it.',
      params: IdParams,
      body: Type.Object({ text: Type.String({ minLength: 1, maxLength: NOTE_MAX }) }),
      response: { 200: NoteObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeNote(await services.notes.create(auth, req.params.id, req.body)),
  }),
];
