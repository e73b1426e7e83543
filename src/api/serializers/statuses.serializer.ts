import { Type } from 'typebox';
import type { StatusRow } from '../../domain/statuses/statuses.types.js';
import { STATUS_TYPES } from '../../domain/statuses/statuses.types.js';

/** docs/api/resources.md "Payment type, tag, status, template group": the same shape in every version. Column `position` is `order`. */
export const StatusObject = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    order: Type.Integer({ description: 'Sort position within one status type' }),
    type: Type.Enum([...STATUS_TYPES]),
    color: Type.String({ description: 'CSS color: #rgb, #rgba, #rrggbb, #rrggbbaa, a color name, or empty' }),
  },
  { title: 'LeadStatus', description: 'Lead status' },
);

export function serializeStatus(row: StatusRow) {
  return { id: row.id, name: row.name, order: row.position, type: row.type, color: row.color };
}
