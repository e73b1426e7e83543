import { Type } from 'typebox';
import type { TagRow } from '../../domain/tags/tags.types.js';

export const TagObject = Type.Object({ id: Type.Integer(), tag: Type.String() }, { title: 'Tag', description: 'Tag' });

export function serializeTag(row: TagRow) {
  return { id: row.id, tag: row.tag };
}
