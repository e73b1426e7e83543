import type { Selectable } from 'kysely';
import type { TagsTable } from '../../db/schema.js';

export type TagRow = Selectable<TagsTable>;

/** The case-free form of a tag, stored in `tags.tag_key` for prefix search. */
export function tagKey(tag: string): string {
  return tag.toLowerCase();
}

/** Tag order: case-free, then exact value; the same on both dialects (no database collation). */
export function compareTags(a: Pick<TagRow, 'tag' | 'tag_key' | 'id'>, b: Pick<TagRow, 'tag' | 'tag_key' | 'id'>): number {
  const byKey = a.tag_key < b.tag_key ? -1 : a.tag_key > b.tag_key ? 1 : 0;
  const byTag = a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0;
  return byKey || byTag || a.id - b.id;
}
