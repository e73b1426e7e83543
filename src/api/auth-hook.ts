import type { FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { forbidden, rateLimited, unauthorized } from '../domain/errors.js';
import { tokenFromHeader } from '../domain/auth/token-signer.js';
import { RateLimiter } from '../domain/auth/rate-limiter.js';
import { requireScope, requireScopeForMethod } from '../domain/policy/policy.js';

/**
 * Runs before the body is read: a request without a valid token costs no parsing. Routes declare
 * `auth: 'none'` to opt out; owner-only routes answer 403 to managers.
 */
export function createAuthHook(services: Services) {
  const perMinute = services.deps.config.apiRateLimitPerMinute;
  const limiter = perMinute > 0 ? RateLimiter.for(services.deps, 'api', perMinute, 60_000) : undefined;
  return async function authenticate(request: FastifyRequest): Promise<void> {
    const config = request.routeOptions.config;
    if (!config?.apiVersion || config.auth === 'none') return;
    const raw = tokenFromHeader(request.headers.authorization);
    if (!raw) throw unauthorized('Missing or malformed Authorization header');
    const auth = await services.auth.authenticate(raw);
    if (limiter) {
      const wait = await limiter.hit(`${auth.typ}:${auth.userId}`);
      if (wait) throw rateLimited(wait, 'Too many requests for this token');
    }
    if (config.ownerOnly && auth.role !== 'owner') throw forbidden('Only the account owner may do this');
    if (auth.scopes) {
      requireScopeForMethod(auth, request.method);
      if (config.ownerOnly) requireScope(auth, 'admin');
    }
    request.auth = auth;
  };
}
