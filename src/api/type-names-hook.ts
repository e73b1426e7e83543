import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { namesMappedType, withHostedTypeNames } from '../domain/accounts/type-names.js';

/** The credentials of integrations (API keys, OAuth apps, plugins); the agent app's sessions keep the codes its channel table reads. */
const INTEGRATOR_TOKENS = new Set(['api', 'oauth', 'plugin']);

/**
 * The one place where answers follow the account's `typeNames` setting (docs/api/integrations.md):
 * a JSON answer to an integration's credentials that names a renamed type is rewritten when the
 * account asked for the hosted service's names. Other answers cost a substring search.
 */
export function hostedTypeNamesHook(services: Services) {
  return async function hostedTypeNames(req: FastifyRequest, _reply: FastifyReply, payload: unknown): Promise<unknown> {
    const auth = req.auth;
    if (!auth || !INTEGRATOR_TOKENS.has(auth.typ) || typeof payload !== 'string' || !namesMappedType(payload)) return payload;
    const { typeNames } = await services.accountSettings.get(auth.accountId);
    return typeNames === 'hosted' ? withHostedTypeNames(payload) : payload;
  };
}
