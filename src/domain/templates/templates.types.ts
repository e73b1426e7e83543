import type { Selectable } from 'kysely';
import type { TemplateGroupsTable, TemplatesTable } from '../../db/schema.js';

export type TemplateGroupRow = Selectable<TemplateGroupsTable>;
export type TemplateRow = Selectable<TemplatesTable>;

/** A group with the phrases the reader may see. */
export interface TemplateGroupView {
  group: TemplateGroupRow;
  templates: TemplateRow[];
}

/**
 * A phrase as written. `userId`: null (or absent on create) is a phrase for every employee; an id
 * makes it personal to that employee. On edit, an absent field keeps its value.
 */
export interface PhraseInput {
  template?: string;
  hotkey?: string | null;
  userId?: number | null;
}
