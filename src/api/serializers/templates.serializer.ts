import { Type } from 'typebox';
import type { TemplateGroupView, TemplateRow } from '../../domain/templates/templates.types.js';

/** A phrase: `userId` null is shared with every employee, an id is personal to that employee. */
export const TemplatePhraseObject = Type.Object(
  {
    id: Type.Integer(),
    template: Type.String(),
    hotkey: Type.String(),
    userId: Type.Union([Type.Integer(), Type.Null()]),
  },
  { title: 'TemplatePhrase', description: 'Reply template phrase' },
);

export const TemplateGroupObject = Type.Object(
  { id: Type.Integer(), key: Type.String(), templates: Type.Array(TemplatePhraseObject) },
  { title: 'TemplateGroup', description: 'Reply template group' },
);

export function serializePhrase(row: TemplateRow) {
  return { id: row.id, template: row.template, hotkey: row.hotkey, userId: row.user_id };
}

export function serializeTemplateGroup(view: TemplateGroupView) {
  return { id: view.group.id, key: view.group.key, templates: view.templates.map(serializePhrase) };
}
