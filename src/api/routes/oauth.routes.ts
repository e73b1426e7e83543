import { Type } from 'typebox';
import { defineRoute, V13 } from '../route.js';
import { Empty, Id, IdParams } from '../schemas/common.js';

const RedirectUri = Type.String({ minLength: 1, maxLength: 2000 });

const OAuthApp = Type.Object({
  id: Id,
  clientId: Type.String(),
  name: Type.String(),
  redirectUris: Type.Array(Type.String()),
  confidential: Type.Boolean({ description: 'Confidential apps authenticate with their secret; public ones with PKCE alone' }),
  createdAt: Type.Integer({ description: 'Unix milliseconds' }),
});

const AuthorizeQuery = Type.Object({
  response_type: Type.String({ maxLength: 20 }),
  client_id: Type.String({ minLength: 1, maxLength: 200 }),
  redirect_uri: Type.Optional(RedirectUri),
  scope: Type.Optional(Type.String({ maxLength: 200 })),
  state: Type.Optional(Type.String({ maxLength: 2000 })),
  code_challenge: Type.Optional(Type.String({ minLength: 43, maxLength: 128 })),
  code_challenge_method: Type.Optional(Type.String({ maxLength: 10 })),
});

const tags = ['oauth'];

/** OAuth 2 apps (owner), the consent step (signed-in employee) and the employee's connected apps. */
export const oauthRoutes = [
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/oauth/apps',
    ownerOnly: true,
    schema: {
      tags,
      summary: "Register an OAuth 2 app (owner, signed in); a confidential app's secret is shown once",
      body: Type.Object({
        name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
        redirectUris: Type.Array(RedirectUri, { minItems: 1, maxItems: 10 }),
        confidential: Type.Boolean(),
      }),
      response: { 200: Type.Intersect([OAuthApp, Type.Object({ clientSecret: Type.Optional(Type.String()) })]) },
    },
    handler: (req, _reply, { services, auth }) => services.oauth.createApp(auth, req.body),
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/oauth/apps',
    ownerOnly: true,
    schema: { tags, summary: "List the account's OAuth 2 apps (without secrets)", response: { 200: Type.Array(OAuthApp) } },
    handler: (_req, _reply, { services, auth }) => services.oauth.listApps(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/oauth/apps/:id',
    ownerOnly: true,
    schema: { tags, summary: 'Delete an OAuth 2 app: every token it holds ends', params: IdParams, response: { 200: Empty } },
    handler: async (req, _reply, { services, auth }) => {
      await services.oauth.deleteApp(auth, req.params.id);
      return {};
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/oauth/authorize',
    schema: {
      tags,
      summary: 'Check an authorization request for the consent screen (signed-in employee)',
      description: 'Takes the query of /oauth/authorize. A problem is a 400 whose code is the OAuth error.',
      querystring: AuthorizeQuery,
      response: {
        200: Type.Object({
          app: Type.Object({ clientId: Type.String(), name: Type.String() }),
          scopes: Type.Array(Type.String()),
          redirectUri: Type.String(),
        }),
      },
    },
    handler: (req, _reply, { services, auth }) => services.oauthProtocol.preview(auth, req.query),
  }),
  defineRoute({
    versions: V13,
    method: 'POST',
    url: '/oauth/authorize',
    schema: {
      tags,
      summary: 'Allow or deny an authorization request (signed-in employee); answers where to send the browser',
      body: Type.Intersect([AuthorizeQuery, Type.Object({ allowed: Type.Boolean() })]),
      response: { 200: Type.Object({ redirectTo: Type.String() }) },
    },
    handler: (req, _reply, { services, auth }) => {
      const { allowed, ...params } = req.body;
      return services.oauthProtocol.authorize(auth, params, allowed);
    },
  }),
  defineRoute({
    versions: V13,
    method: 'GET',
    url: '/oauth/grants',
    schema: {
      tags,
      summary: 'The apps the signed-in employee has authorized',
      response: {
        200: Type.Array(Type.Object({ appId: Id, name: Type.String(), scopes: Type.Array(Type.String()), grantedAt: Type.Integer() })),
      },
    },
    handler: (_req, _reply, { services, auth }) => services.oauth.listConnected(auth),
  }),
  defineRoute({
    versions: V13,
    method: 'DELETE',
    url: '/oauth/grants/:id',
    schema: {
      tags,
      summary: "Revoke the signed-in employee's authorization of an app (id: the app id); its tokens end",
      params: IdParams,
      response: { 200: Empty },
    },
    handler: async (req, _reply, { services, auth }) => {
      await services.oauth.revokeConnected(auth, req.params.id);
      return {};
    },
  }),
];
