import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';
import { publicBase } from '../serializers/widget.serializer.js';
import { LIMITS, WIDGET_LANGUAGES } from '../../domain/widget/widget.types.js';

const Mode = Type.String({ enum: ['optional', 'required', 'off'] });
const Language = Type.String({
  enum: [...WIDGET_LANGUAGES],
  description: `The language of the widget's own texts (buttons, form, errors): auto (the visitor's browser) or one of ${WIDGET_LANGUAGES.filter((l) => l !== 'auto').join(', ')}`,
});
const PreChat = Type.Object(
  { name: Mode, email: Mode, phone: Mode },
  { description: 'Pre-chat form fields: each optional, required or off' },
);

export const WidgetSettingsSchema = Type.Object(
  {
    title: Type.String({ description: 'Panel title' }),
    greeting: Type.String({ description: 'First message shown to visitors' }),
    color: Type.String({ description: 'Accent color, #rrggbb' }),
    allowedOrigins: Type.Array(Type.String(), { description: 'Sites allowed to embed the widget (empty: any)' }),
    preChat: PreChat,
    offlineMessage: Type.String({ description: 'Shown with the offline form while `offline` is on' }),
    offline: Type.Boolean({ description: 'Nobody answers now: the widget shows the offline form (e-mail required)' }),
    identityVerification: Type.Boolean({ description: 'Visitors must carry an identifier signed with the widget secret' }),
    language: Language,
  },
  { title: 'WidgetSettings', description: 'Site widget settings' },
);

/** The owner's view of a widget; also the `widget` member of the connect answer. */
export const WidgetInfo = Type.Object(
  {
    integrationId: Id,
    key: Type.String({ description: 'Public widget key (data-parley-key)' }),
    snippet: Type.String({ description: 'The HTML script element to paste into the site' }),
    scriptUrl: Type.String({ description: 'URL of widget.js on this server' }),
    secret: Type.String({ description: 'Widget secret: HMAC-SHA256 key for identity verification. Keep it on your server' }),
    settings: WidgetSettingsSchema,
  },
  { title: 'Widget', description: 'Site widget: key, embed snippet, secret (owner only) and settings' },
);

const SettingsPatch = Type.Object(
  {
    title: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.title })),
    greeting: Type.Optional(Type.String({ maxLength: LIMITS.greeting })),
    color: Type.Optional(Type.String({ pattern: '^#[0-9a-fA-F]{6}$', maxLength: 7 })),
    allowedOrigins: Type.Optional(Type.Array(Type.String({ maxLength: LIMITS.origin }), { maxItems: LIMITS.origins })),
    preChat: Type.Optional(
      Type.Object({ name: Type.Optional(Mode), email: Type.Optional(Mode), phone: Type.Optional(Mode) }, { additionalProperties: false }),
    ),
    offlineMessage: Type.Optional(Type.String({ maxLength: LIMITS.offlineMessage })),
    offline: Type.Optional(Type.Boolean()),
    identityVerification: Type.Optional(Type.Boolean()),
    language: Type.Optional(Language),
  },
  { description: 'The settings to change; the others keep their values' },
);

const tags = ['widget'];

/** Employee-side routes of the site widget (v1.3 extensions). The visitors' protocol is widget-visitor.routes.ts. */
export const widgetRoutes = [
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/integrations/:id/widget',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'A site widget: settings, embed snippet and secret (owner only)',
      params: IdParams,
      response: { 200: WidgetInfo },
    },
    handler: async (req, _reply, { services, auth }) =>
      services.widget.admin.get(auth, req.params.id, publicBase(services.deps.config, req)),
  }),
  defineRoute({
    versions: V13,
    method: 'PUT',
    url: '/integrations/:id/widget',
    ownerOnly: true,
    schema: {
      tags,
      summary: 'Change site widget settings (owner only)',
      params: IdParams,
      body: SettingsPatch,
      response: { 200: WidgetInfo },
    },
    handler: async (req, _reply, { services, auth }) =>
      services.widget.admin.updateSettings(auth, req.params.id, req.body, publicBase(services.deps.config, req)),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/widget/leads/:id/typing',
    optionalBody: true,
    schema: {
      tags,
      summary: "Show (or stop showing) that an employee is typing, in the visitor's open widget tabs",
      params: IdParams,
      body: Type.Object({ typing: Type.Optional(Type.Boolean({ description: 'Default true' })) }),
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.widget.typing.employeeTyping(auth, req.params.id, req.body.typing ?? true);
      return {};
    },
  }),
];
