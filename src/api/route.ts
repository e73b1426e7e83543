import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { Static, TSchema } from 'typebox';
import formbody from '@fastify/formbody';
import { API_VERSIONS, VERSION_TRAITS, type ApiVersion, type VersionTraits } from './versions.js';
import { errorResponses } from './errors.js';
import type { Services } from '../services.js';
import type { AuthContext } from '../domain/auth/auth-context.js';

export interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  body?: TSchema;
  querystring?: TSchema;
  params?: TSchema;
  headers?: TSchema;
  response?: Record<number, TSchema>;
}

type In<S extends RouteSchema, K extends keyof RouteSchema> = S[K] extends TSchema ? Static<S[K]> : unknown;

export type TypedRequest<S extends RouteSchema> = FastifyRequest<{
  Body: In<S, 'body'>;
  Querystring: In<S, 'querystring'>;
  Params: In<S, 'params'>;
}>;

/** What a handler gets besides request and reply: its version, that version's traits, services. */
export interface HandlerContext {
  version: ApiVersion;
  traits: VersionTraits;
  services: Services;
}

export interface AuthedHandlerContext extends HandlerContext {
  auth: AuthContext;
}

interface RouteBase<S extends RouteSchema> {
  versions: readonly ApiVersion[];
  method: HTTPMethods;
  url: string;
  /** A schema, or one per version where responses differ (employee objects, search results). */
  schema: S | ((version: ApiVersion) => S);
  /** The body may be absent or empty whatever the Content-Type says (docs/api/README.md). */
  optionalBody?: boolean;
  /** Bytes, when smaller than PARLEY_BODY_LIMIT fits what the route takes (unauthenticated routes). */
  bodyLimit?: number;
}

export interface PublicRoute<S extends RouteSchema> extends RouteBase<S> {
  auth: 'none';
  handler: (req: TypedRequest<S>, reply: FastifyReply, ctx: HandlerContext) => Promise<unknown>;
}

export interface AuthedRoute<S extends RouteSchema> extends RouteBase<S> {
  auth?: 'user';
  /** Managers get 403 (docs/api/auth.md). */
  ownerOnly?: boolean;
  handler: (req: TypedRequest<S>, reply: FastifyReply, ctx: AuthedHandlerContext) => Promise<unknown>;
}

// biome-ignore lint/suspicious/noExplicitAny: routes of every schema share one list; defineRoute checks each against its own schema
export type RouteDef = PublicRoute<any> | AuthedRoute<any>;

/** Declares one route of the REST face, typed by its schema. Areas export arrays of these. */
export function defineRoute<S extends RouteSchema>(def: PublicRoute<S> | AuthedRoute<S>): RouteDef {
  return def as RouteDef;
}

export const ALL = API_VERSIONS;
export const V13 = ['v1.3'] as const;

declare module 'fastify' {
  interface FastifyContextConfig {
    apiVersion?: ApiVersion;
    auth?: 'none' | 'user';
    ownerOnly?: boolean;
    optionalBody?: boolean;
  }
  interface FastifyRequest {
    auth: AuthContext | null;
  }
}

/**
 * Registers every route under each of its versions' prefixes. A version is a scope of its own:
 * form bodies are parsed only where the version's traits accept them (fastify answers 415 elsewhere).
 */
export async function registerApi(app: FastifyInstance, routes: RouteDef[], services: Services): Promise<void> {
  for (const version of API_VERSIONS) {
    const traits = VERSION_TRAITS[version];
    await app.register(
      async (scope) => {
        if (traits.formBodies) await scope.register(formbody, { bodyLimit: app.initialConfig.bodyLimit });
        for (const def of routes) {
          if (!def.versions.includes(version)) continue;
          const schema = typeof def.schema === 'function' ? def.schema(version) : def.schema;
          const ctx: HandlerContext = { version, traits, services };
          // biome-ignore lint/suspicious/noExplicitAny: the context is a HandlerContext or an AuthedHandlerContext, as def.auth says (checked by defineRoute)
          const handler = def.handler as (req: FastifyRequest, reply: FastifyReply, ctx: any) => Promise<unknown>;
          scope.route({
            method: def.method,
            url: def.url,
            // No HEAD twin of each GET: it doubled the router's work at start-up (~100 ms of CPU,
            // docs/performance.md, "Start-up"), and the API documents none.
            exposeHeadRoute: false,
            ...(def.bodyLimit ? { bodyLimit: Math.min(def.bodyLimit, app.initialConfig.bodyLimit ?? def.bodyLimit) } : {}),
            schema: {
              ...schema,
              security: def.auth === 'none' ? [] : undefined,
              response: { ...schema.response, ...errorResponses(traits) },
            },
            config: {
              apiVersion: version,
              auth: def.auth ?? 'user',
              ownerOnly: 'ownerOnly' in def ? def.ownerOnly : undefined,
              optionalBody: def.optionalBody,
            },
            handler: (req, reply) => handler(req, reply, req.auth ? { ...ctx, auth: req.auth } : ctx),
          });
        }
      },
      { prefix: `/${version}` },
    );
  }
}
