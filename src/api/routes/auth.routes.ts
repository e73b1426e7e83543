import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, TokenObject } from '../schemas/common.js';
import { AUTH_BODY_LIMIT } from '../body-limits.js';
import { unauthorized } from '../../domain/errors.js';
import { tokenFromHeader } from '../../domain/auth/token-signer.js';
import { LocaleSchema } from '../serializers/employees.serializer.js';

const TokenPair = Type.Object({ accessToken: TokenObject, refreshToken: TokenObject });
const Login = Type.String({ minLength: 1, maxLength: 254 });
const Pass = Type.String({ minLength: 1, maxLength: 256 });

export const authRoutes = [
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/auth/register',
    auth: 'none',
    bodyLimit: AUTH_BODY_LIMIT,
    schema: {
      tags: ['auth'],
      summary: 'Create an account with its owner (first account always; later ones when sign-up is open)',
      body: Type.Object({
        login: Type.String({ format: 'email', maxLength: 254 }),
        pass: Type.String({ minLength: 8, maxLength: 256 }),
        name: Type.String({ minLength: 1, maxLength: 200 }),
        locale: Type.Optional(LocaleSchema),
      }),
      response: { 200: TokenPair },
    },
    handler: (req, _reply, { services }) => services.auth.register(req.body, req.ip),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/auth/login',
    auth: 'none',
    bodyLimit: AUTH_BODY_LIMIT,
    schema: {
      tags: ['auth'],
      summary: 'Sign in with login and password',
      body: Type.Object({ login: Login, pass: Pass }),
      response: { 200: TokenPair },
    },
    handler: (req, _reply, { services }) => services.auth.login(req.body.login, req.body.pass, req.ip),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/auth/tokens',
    auth: 'none',
    bodyLimit: AUTH_BODY_LIMIT,
    optionalBody: true,
    schema: {
      tags: ['auth'],
      summary: 'Renew tokens with a refresh token (Authorization header or body)',
      description:
        'Answers both tokens when the refresh token has less than half of its life left (it is then revoked), otherwise only accessToken.',
      body: Type.Object({ refreshToken: Type.Optional(Type.String({ maxLength: 4096 })) }),
      response: { 200: Type.Object({ accessToken: TokenObject, refreshToken: Type.Optional(TokenObject) }) },
    },
    handler: async (req, _reply, { services }) => {
      const raw = tokenFromHeader(req.headers.authorization) ?? req.body.refreshToken;
      if (!raw) throw unauthorized('A refresh token is required');
      return services.auth.refresh(raw);
    },
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/auth/plugin',
    auth: 'none',
    bodyLimit: AUTH_BODY_LIMIT,
    schema: {
      tags: ['auth'],
      summary: 'Exchange a plugin token for an access token acting as an employee',
      body: Type.Object({
        pluginToken: Type.String({ minLength: 1, maxLength: 4096 }),
        manager: Type.Union([Type.Integer({ minimum: 1 }), Type.String({ pattern: '^[1-9][0-9]{0,15}$' })]),
      }),
      response: { 200: Type.Object({ accessToken: TokenObject }) },
    },
    // An unknown or revoked plugin token, or an employee outside the plugin's account: 401.
    handler: (req, _reply, { services }) => services.plugins.exchange(req.body.pluginToken, Number(req.body.manager)),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/auth/invitation',
    auth: 'none',
    bodyLimit: AUTH_BODY_LIMIT,
    schema: {
      tags: ['auth'],
      summary: 'Accept an employee invitation (token from the e-mailed link) and sign in',
      description: 'The token works once and expires (PARLEY_INVITATION_TTL); a used, expired or unknown token -> 401.',
      body: Type.Object({
        token: Type.String({ minLength: 1, maxLength: 512 }),
        pass: Type.String({ minLength: 8, maxLength: 256 }),
        name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
      }),
      response: { 200: TokenPair },
    },
    handler: (req, _reply, { services }) => services.employees.acceptInvitation(req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/auth/sessions',
    schema: {
      tags: ['auth'],
      summary: 'Sign out everywhere: end every token of the signed-in employee',
      description:
        'Every access, refresh and plugin token of the employee (and, for the owner, every API key) stops working at ' +
        'once, and its realtime sockets close. Only with an access token (a plugin token or API key -> 403).',
      response: { 200: Empty },
    },
    handler: async (_req, _reply, { services, auth }) => {
      await services.auth.endAllSessions(auth);
      return {};
    },
  }),
];
