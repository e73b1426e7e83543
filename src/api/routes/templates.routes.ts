import { Type } from 'typebox';
import { ALL, defineRoute } from '../route.js';
import { Empty, Id } from '../schemas/common.js';
import { serializePhrase, serializeTemplateGroup, TemplateGroupObject, TemplatePhraseObject } from '../serializers/templates.serializer.js';

const Key = Type.String({ minLength: 1, maxLength: 100 });
const Template = Type.String({ minLength: 1, maxLength: 4000 });
// `type: [x, 'null']` rather than anyOf: v1.1 bodies are coerced, and anyOf would turn null into 0 or "".
const Hotkey = Type.Unsafe<string | null>({ type: ['string', 'null'], maxLength: 50, description: 'Hotkey; null is no hotkey' });
const UserId = Type.Unsafe<number | null>({
  type: ['integer', 'null'],
  minimum: 1,
  maximum: 2 ** 53 - 1,
  description: 'null: shared with every employee; an employee id: personal to that employee',
});
const GroupParams = Type.Object({ groupId: Id });
const PhraseParams = Type.Object({ groupId: Id, templateId: Id });
const tags = ['templates'];
const WHO =
  'The owner may write any phrase. A manager may write only its own personal phrases (userId = its own id): ' +
  'a shared phrase or another userId answers 403.';

export const templatesRoutes = [
  defineRoute({
    versions: ALL,
    method: 'GET',
    url: '/templates',
    schema: {
      tags,
      summary: 'List reply template groups with their phrases',
      description: 'Each caller (the owner too) sees the shared phrases and its own personal ones. Groups and phrases in creation order.',
      response: { 200: Type.Array(TemplateGroupObject) },
    },
    handler: async (_req, _reply, { services, auth }) => (await services.templates.list(auth)).map(serializeTemplateGroup),
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/templates',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Create a template group (owner only); answers the group',
      description: 'A key another group has answers 409.',
      body: Type.Object({ key: Key }),
      response: { 200: TemplateGroupObject },
    },
    handler: async (req, _reply, { services, auth }) => serializeTemplateGroup(await services.templates.createGroup(auth, req.body.key)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/templates',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Rename a template group (owner only); answers the group',
      description: 'An unknown `key` answers 404; a `newKey` another group has answers 409.',
      body: Type.Object({ key: Key, newKey: Key }),
      response: { 200: TemplateGroupObject },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializeTemplateGroup(await services.templates.renameGroup(auth, req.body.key, req.body.newKey)),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/templates/group',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Delete a template group with all its phrases (owner only); answers {}',
      querystring: Type.Object({ id: Id }),
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.templates.deleteGroup(auth, req.query.id);
      return {};
    },
  }),
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/templates/:groupId',
    schema: {
      tags,
      summary: 'Add a phrase to a group; answers the phrase',
      description: `An unknown group answers 404. userId absent or null: shared; it must be an employee of the account (else 400). ${WHO}`,
      params: GroupParams,
      body: Type.Object({ template: Template, hotkey: Type.Optional(Hotkey), userId: Type.Optional(UserId) }),
      response: { 200: TemplatePhraseObject },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializePhrase(await services.templates.addPhrase(auth, req.params.groupId, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'PUT',
    url: '/templates/:groupId/:templateId',
    schema: {
      tags,
      summary: 'Edit a phrase of a group; answers the phrase',
      description: `Absent fields keep their value; userId null makes the phrase shared. ${WHO}`,
      params: PhraseParams,
      body: Type.Object({ template: Type.Optional(Template), hotkey: Type.Optional(Hotkey), userId: Type.Optional(UserId) }),
      response: { 200: TemplatePhraseObject },
    },
    handler: async (req, _reply, { services, auth }) =>
      serializePhrase(await services.templates.updatePhrase(auth, req.params.groupId, req.params.templateId, req.body)),
  }),
  defineRoute({
    versions: ALL,
    method: 'DELETE',
    url: '/templates/:groupId/:templateId',
    schema: {
      tags,
      summary: 'Delete a phrase of a group; answers {}',
      description: WHO,
      params: PhraseParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.templates.deletePhrase(auth, req.params.groupId, req.params.templateId);
      return {};
    },
  }),
];
