import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import { Type } from 'typebox';
import type { Services } from '../../services.js';
import type { ProtocolAnswer } from '../../domain/oauth/oauth-protocol.js';

const TokenRequest = Type.Object(
  {
    grant_type: Type.String(),
    code: Type.Optional(Type.String()),
    redirect_uri: Type.Optional(Type.String()),
    code_verifier: Type.Optional(Type.String()),
    refresh_token: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    client_secret: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

const RevocationRequest = Type.Object(
  { token: Type.String(), token_type_hint: Type.Optional(Type.String()), client_id: Type.Optional(Type.String()) },
  { additionalProperties: true },
);

const FORM = 'application/x-www-form-urlencoded';

const OAuthErrorBody = Type.Object({ error: Type.String(), error_description: Type.Optional(Type.String()) });

/**
 * The OAuth 2 endpoints an app's OAuth library speaks to (docs/api/oauth.md). They take
 * `application/x-www-form-urlencoded` and answer in OAuth's own format (RFC 6749 §5), so they sit
 * outside the versioned JSON routes; the bodies are checked by the protocol, not by a schema.
 */
export async function registerOAuthProtocolRoutes(app: FastifyInstance, services: Services): Promise<void> {
  await app.register(async (scope) => {
    await scope.register(formbody, { bodyLimit: 16 * 1024 });
    const send = (reply: FastifyReply, answer: ProtocolAnswer) =>
      reply
        .code(answer.status)
        .headers({ ...answer.headers, 'cache-control': 'no-store', pragma: 'no-cache' })
        .send(answer.body);
    const input = (req: FastifyRequest) => ({
      method: req.method,
      headers: req.headers,
      body: req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {},
    });
    scope.post(
      '/oauth/token',
      {
        schema: {
          tags: ['oauth'],
          summary: 'OAuth 2 token endpoint: authorization_code (with PKCE) and refresh_token (rotating) grants',
          security: [],
          body: { content: { [FORM]: { schema: TokenRequest } } },
          response: {
            200: Type.Object({
              access_token: Type.String(),
              token_type: Type.String(),
              expires_in: Type.Integer(),
              refresh_token: Type.Optional(Type.String()),
              scope: Type.Optional(Type.String()),
            }),
            400: OAuthErrorBody,
            401: OAuthErrorBody,
          },
        },
        // The body is the protocol's to judge (its errors are OAuth errors), so the schema only documents it.
        attachValidation: true,
      },
      async (req, reply) => send(reply, await services.oauthProtocol.token(input(req))),
    );
    scope.post(
      '/oauth/revoke',
      {
        schema: {
          tags: ['oauth'],
          summary: 'OAuth 2 token revocation (RFC 7009): revokes the grant the token belongs to',
          security: [],
          body: { content: { [FORM]: { schema: RevocationRequest } } },
          response: { 200: Type.Object({}), 400: OAuthErrorBody, 401: OAuthErrorBody },
        },
        attachValidation: true,
      },
      async (req, reply) => send(reply, await services.oauthProtocol.revoke(input(req))),
    );
  });

  app.get(
    '/.well-known/oauth-authorization-server',
    {
      schema: {
        tags: ['oauth'],
        summary: 'OAuth 2 authorization server metadata (RFC 8414)',
        security: [],
        response: { 200: Type.Object({ issuer: Type.String() }, { additionalProperties: true }) },
      },
    },
    async (req) => services.oauthProtocol.metadata(services.deps.config.publicUrl?.replace(/\/+$/, '') ?? `${req.protocol}://${req.host}`),
  );
}
